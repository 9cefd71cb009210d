CREATE TABLE `refused_daily_total` (
	`day` integer NOT NULL,
	`code` text NOT NULL,
	`count` integer NOT NULL,
	PRIMARY KEY(`day`, `code`)
);
--> statement-breakpoint
CREATE TABLE `refused_hourly` (
	`hour` integer NOT NULL,
	`kind` text NOT NULL,
	`client` text NOT NULL,
	`code` text NOT NULL,
	`count` integer NOT NULL,
	`last_at` integer NOT NULL,
	PRIMARY KEY(`hour`, `kind`, `client`, `code`)
);
--> statement-breakpoint
CREATE INDEX `refused_hourly_client_hour` ON `refused_hourly` (`kind`,`client`,`hour`);