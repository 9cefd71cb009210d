ALTER TABLE `api_keys` ADD `guard_encodes` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `usage_daily_total` ADD `guard_encodes` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `usage_hourly` ADD `guard_encodes` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `usage_hourly_total` ADD `guard_encodes` integer DEFAULT 0 NOT NULL;