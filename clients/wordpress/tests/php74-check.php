<?php
/**
 * Checks that PHP files use no syntax newer than PHP 7.4 (the plugin's "Requires PHP"), from the
 * tokens PHP 8 gives them: match, enum, readonly, nullsafe ?->, attributes #[…], named arguments,
 * union and mixed/never/static types in signatures, constructor promotion, first-class callables
 * (…), throw as an expression, catch without a variable, new in initialisers; and calls of the
 * functions PHP 8 added (str_contains…).
 *
 *   php clients/wordpress/tests/php74-check.php FILE…   (one line per file; exit 1 if any fails)
 *
 * @package imgpress
 */

/**
 * The problems of one file.
 *
 * @param string $file PHP file.
 * @return string[]
 */
function imgpress_php74_problems( $file ) {
	$tokens   = token_get_all( file_get_contents( $file ) );
	$problems = array();
	$named    = array( 'T_MATCH' => 'match', 'T_ENUM' => 'enum', 'T_READONLY' => 'readonly', 'T_NULLSAFE_OBJECT_OPERATOR' => '?->', 'T_ATTRIBUTE' => '#[ attribute' );
	$code     = array();
	foreach ( $tokens as $t ) {
		if ( is_array( $t ) && in_array( $t[0], array( T_WHITESPACE, T_COMMENT, T_DOC_COMMENT ), true ) ) {
			continue;
		}
		$code[] = $t;
	}
	$text = function ( $t ) {
		return is_array( $t ) ? $t[1] : $t;
	};
	$line = function ( $i ) use ( $code ) {
		for ( $j = $i; $j >= 0; $j-- ) {
			if ( is_array( $code[ $j ] ) ) {
				return $code[ $j ][2];
			}
		}
		return 0;
	};
	$depth_in_signature = 0;
	$in_signature       = false;
	$n                  = count( $code );
	for ( $i = 0; $i < $n; $i++ ) {
		$t = $code[ $i ];
		if ( is_array( $t ) ) {
			foreach ( $named as $const => $what ) {
				if ( defined( $const ) && constant( $const ) === $t[0] ) {
					$problems[] = "line {$t[2]}: $what";
				}
			}
			if ( T_FUNCTION === $t[0] || ( defined( 'T_FN' ) && T_FN === $t[0] ) ) {
				$in_signature       = true;
				$depth_in_signature = 0;
			}
			if ( T_THROW === $t[0] && $i > 0 && in_array( $text( $code[ $i - 1 ] ), array( '=', '??', '?', ':', '=>', ',', '(', 'return' ), true ) && 'return' !== $text( $code[ $i - 1 ] ) ) {
				$problems[] = 'line ' . $t[2] . ': throw as an expression';
			}
			if ( T_CATCH === $t[0] ) {
				$j = $i + 2;
				while ( $j < $n && ')' !== $text( $code[ $j ] ) && ! ( is_array( $code[ $j ] ) && T_VARIABLE === $code[ $j ][0] ) ) {
					$j++;
				}
				if ( $j < $n && ')' === $text( $code[ $j ] ) ) {
					$problems[] = 'line ' . $t[2] . ': catch without a variable';
				}
			}
			if ( T_NEW === $t[0] && $in_signature && $depth_in_signature > 0 ) {
				$problems[] = 'line ' . $t[2] . ': new in an initialiser';
			}
			if ( $in_signature && $depth_in_signature > 0 && in_array( $t[0], array( T_PUBLIC, T_PROTECTED, T_PRIVATE ), true ) ) {
				$problems[] = 'line ' . $t[2] . ': constructor promotion';
			}
			// A named argument: "(" or "," then a name then a single ":" (not "::", not a ternary's).
			if ( T_STRING === $t[0] && $i > 0 && $i + 1 < $n && in_array( $text( $code[ $i - 1 ] ), array( '(', ',' ), true ) && ':' === $text( $code[ $i + 1 ] ) && ! $in_signature ) {
				$problems[] = 'line ' . $t[2] . ': named argument ' . $t[1] . ':';
			}
			// Functions PHP 8 added (WordPress polyfills some, but only from 5.9 and not all of them).
			if ( T_STRING === $t[0] && in_array( strtolower( $t[1] ), array( 'str_contains', 'str_starts_with', 'str_ends_with', 'array_is_list', 'get_debug_type', 'fdiv', 'get_resource_id', 'preg_last_error_msg' ), true ) && $i + 1 < $n && '(' === $text( $code[ $i + 1 ] ) && ( 0 === $i || ! in_array( $text( $code[ $i - 1 ] ), array( '->', '::', 'function' ), true ) ) ) {
				$problems[] = 'line ' . $t[2] . ': ' . $t[1] . '() needs PHP 8';
			}
			if ( T_ELLIPSIS === $t[0] && $i > 0 && '(' === $text( $code[ $i - 1 ] ) && $i + 1 < $n && ')' === $text( $code[ $i + 1 ] ) ) {
				$problems[] = 'line ' . $t[2] . ': first-class callable syntax';
			}
			continue;
		}
		if ( $in_signature ) {
			if ( '(' === $t ) {
				$depth_in_signature++;
			} elseif ( ')' === $t ) {
				$depth_in_signature--;
				if ( 0 === $depth_in_signature ) {
					// The return type, if any, up to the body or the end of the declaration.
					$j = $i + 1;
					if ( $j < $n && 'use' === strtolower( $text( $code[ $j ] ) ) ) {
						while ( $j < $n && ')' !== $text( $code[ $j ] ) ) {
							$j++;
						}
						$j++;
					}
					if ( $j < $n && ':' === $text( $code[ $j ] ) ) {
						for ( $k = $j + 1; $k < $n && ! in_array( $text( $code[ $k ] ), array( '{', ';', '=>' ), true ); $k++ ) {
							$word = strtolower( $text( $code[ $k ] ) );
							if ( in_array( $word, array( 'mixed', 'never', 'static', 'false', 'null' ), true ) || '|' === $word || '&' === $word ) {
								$problems[] = 'line ' . $line( $k ) . ': return type ' . $word;
							}
						}
					}
					$in_signature = false;
				}
			} elseif ( '|' === $t && $depth_in_signature > 0 ) {
				$problems[] = 'line ' . $line( $i ) . ': union type';
			}
		}
		if ( is_string( $t ) && $in_signature && $depth_in_signature > 0 && isset( $code[ $i + 1 ] ) && is_array( $code[ $i + 1 ] ) && in_array( strtolower( $code[ $i + 1 ][1] ), array( 'mixed' ), true ) ) {
			$problems[] = 'line ' . $line( $i ) . ': mixed type';
		}
	}
	return $problems;
}

$imgpress_failed = 0;
foreach ( array_slice( $argv, 1 ) as $imgpress_file ) {
	$imgpress_problems = imgpress_php74_problems( $imgpress_file );
	echo ( $imgpress_problems ? 'FAIL ' : 'ok   ' ) . $imgpress_file . ( $imgpress_problems ? ': ' . implode( '; ', $imgpress_problems ) : '' ) . "\n";
	$imgpress_failed += $imgpress_problems ? 1 : 0;
}
exit( $imgpress_failed ? 1 : 0 );
