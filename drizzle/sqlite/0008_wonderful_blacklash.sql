CREATE TABLE `usage_daily` (
	`day` integer NOT NULL,
	`key_id` text NOT NULL,
	`conversions` integer NOT NULL,
	`errors` integer NOT NULL,
	`bytes_in` integer NOT NULL,
	`bytes_out` integer NOT NULL,
	PRIMARY KEY(`day`, `key_id`)
);
--> statement-breakpoint
CREATE INDEX `usage_daily_key_day` ON `usage_daily` (`key_id`,`day`,`conversions`,`errors`,`bytes_in`,`bytes_out`);--> statement-breakpoint
ALTER TABLE `api_keys` ADD `last_address` text;
--> statement-breakpoint
-- Backfill: the history already in usage_hourly, summed per key and UTC day (volumes of successful conversions only).
INSERT INTO `usage_daily` (`day`, `key_id`, `conversions`, `errors`, `bytes_in`, `bytes_out`)
SELECT (`hour` / 86400000) * 86400000, `key_id`,
	sum(CASE WHEN `outcome` = 'ok' THEN `count` ELSE 0 END),
	sum(CASE WHEN `outcome` = 'ok' THEN 0 ELSE `count` END),
	sum(CASE WHEN `outcome` = 'ok' THEN `bytes_in` ELSE 0 END),
	sum(CASE WHEN `outcome` = 'ok' THEN `bytes_out` ELSE 0 END)
FROM `usage_hourly` GROUP BY 1, 2;
