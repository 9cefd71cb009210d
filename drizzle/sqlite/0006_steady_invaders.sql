CREATE TABLE `failed_sign_ins` (
	`email` text NOT NULL,
	`hour` integer NOT NULL,
	`attempts` integer NOT NULL,
	`last_client_address` text DEFAULT '' NOT NULL,
	PRIMARY KEY(`email`, `hour`)
);
--> statement-breakpoint
CREATE INDEX `failed_sign_ins_hour` ON `failed_sign_ins` (`hour`);