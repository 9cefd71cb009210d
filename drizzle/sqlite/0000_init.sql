CREATE TABLE `api_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`email` text NOT NULL,
	`site_url` text DEFAULT '' NOT NULL,
	`key_hash` text NOT NULL,
	`key_prefix` text NOT NULL,
	`secret_sealed` text NOT NULL,
	`created_at` integer NOT NULL,
	`last_used_at` integer,
	`revoked_at` integer,
	`conversions` integer DEFAULT 0 NOT NULL,
	`bytes_in` integer DEFAULT 0 NOT NULL,
	`bytes_out` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_key_hash_unique` ON `api_keys` (`key_hash`);--> statement-breakpoint
CREATE INDEX `api_keys_owner` ON `api_keys` (`email`,`site_url`);--> statement-breakpoint
CREATE TABLE `otp_codes` (
	`email` text PRIMARY KEY NOT NULL,
	`code_hash` text NOT NULL,
	`site_url` text,
	`attempts` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `rate_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`bucket` text NOT NULL,
	`at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `rate_events_bucket_at` ON `rate_events` (`bucket`,`at`);--> statement-breakpoint
CREATE TABLE `seen_signatures` (
	`key_id` text NOT NULL,
	`signature` text NOT NULL,
	`expires_at` integer NOT NULL,
	PRIMARY KEY(`key_id`, `signature`)
);
--> statement-breakpoint
CREATE INDEX `seen_signatures_expires` ON `seen_signatures` (`expires_at`);