CREATE TABLE "api_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"email" text NOT NULL,
	"site_url" text DEFAULT '' NOT NULL,
	"key_hash" text NOT NULL,
	"key_prefix" text NOT NULL,
	"secret_sealed" text NOT NULL,
	"created_at" bigint NOT NULL,
	"last_used_at" bigint,
	"revoked_at" bigint,
	"conversions" bigint DEFAULT 0 NOT NULL,
	"bytes_in" bigint DEFAULT 0 NOT NULL,
	"bytes_out" bigint DEFAULT 0 NOT NULL,
	"guard_encodes" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "api_keys_key_hash_unique" UNIQUE("key_hash")
);
--> statement-breakpoint
CREATE TABLE "audit_events" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"at" bigint NOT NULL,
	"type" text NOT NULL,
	"actor" text NOT NULL,
	"subject" text DEFAULT '' NOT NULL,
	"client_address" text DEFAULT '' NOT NULL,
	"detail" text DEFAULT '{}' NOT NULL
);
--> statement-breakpoint
CREATE TABLE "database_facts" (
	"name" text PRIMARY KEY NOT NULL,
	"value" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "heartbeat" (
	"id" integer PRIMARY KEY NOT NULL,
	"at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "otp_codes" (
	"email" text PRIMARY KEY NOT NULL,
	"code_hash" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"created_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL,
	"site_url" text
);
--> statement-breakpoint
CREATE TABLE "rate_events" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"bucket" text NOT NULL,
	"at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "seen_signatures" (
	"key_id" text NOT NULL,
	"signature" text NOT NULL,
	"expires_at" bigint NOT NULL,
	CONSTRAINT "seen_signatures_key_id_signature_pk" PRIMARY KEY("key_id","signature")
);
--> statement-breakpoint
CREATE TABLE "staff_codes" (
	"email" text PRIMARY KEY NOT NULL,
	"code_hash" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"created_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "staff_members" (
	"email" text PRIMARY KEY NOT NULL,
	"added_at" bigint NOT NULL,
	"added_by" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "staff_sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"token_hash" text NOT NULL,
	"email" text NOT NULL,
	"client_address" text NOT NULL,
	"user_agent" text NOT NULL,
	"created_at" bigint NOT NULL,
	"last_seen_at" bigint NOT NULL,
	CONSTRAINT "staff_sessions_token_hash_unique" UNIQUE("token_hash")
);
--> statement-breakpoint
CREATE TABLE "usage_daily_total" (
	"day" bigint NOT NULL,
	"format" text NOT NULL,
	"quality" text NOT NULL,
	"outcome" text NOT NULL,
	"count" bigint NOT NULL,
	"bytes_in" bigint NOT NULL,
	"bytes_out" bigint NOT NULL,
	"convert_ms" bigint NOT NULL,
	"lat_0" bigint DEFAULT 0 NOT NULL,
	"lat_1" bigint DEFAULT 0 NOT NULL,
	"lat_2" bigint DEFAULT 0 NOT NULL,
	"lat_3" bigint DEFAULT 0 NOT NULL,
	"lat_4" bigint DEFAULT 0 NOT NULL,
	"lat_5" bigint DEFAULT 0 NOT NULL,
	"lat_6" bigint DEFAULT 0 NOT NULL,
	"lat_7" bigint DEFAULT 0 NOT NULL,
	"lat_8" bigint DEFAULT 0 NOT NULL,
	"lat_9" bigint DEFAULT 0 NOT NULL,
	"lat_10" bigint DEFAULT 0 NOT NULL,
	"lat_11" bigint DEFAULT 0 NOT NULL,
	"lat_12" bigint DEFAULT 0 NOT NULL,
	"lat_13" bigint DEFAULT 0 NOT NULL,
	"lat_14" bigint DEFAULT 0 NOT NULL,
	"lat_15" bigint DEFAULT 0 NOT NULL,
	"guard_encodes" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "usage_daily_total_day_format_quality_outcome_pk" PRIMARY KEY("day","format","quality","outcome")
);
--> statement-breakpoint
CREATE TABLE "usage_hourly" (
	"hour" bigint NOT NULL,
	"key_id" text NOT NULL,
	"format" text NOT NULL,
	"quality" text NOT NULL,
	"outcome" text NOT NULL,
	"count" bigint NOT NULL,
	"bytes_in" bigint NOT NULL,
	"bytes_out" bigint NOT NULL,
	"convert_ms" bigint NOT NULL,
	"lat_0" bigint DEFAULT 0 NOT NULL,
	"lat_1" bigint DEFAULT 0 NOT NULL,
	"lat_2" bigint DEFAULT 0 NOT NULL,
	"lat_3" bigint DEFAULT 0 NOT NULL,
	"lat_4" bigint DEFAULT 0 NOT NULL,
	"lat_5" bigint DEFAULT 0 NOT NULL,
	"lat_6" bigint DEFAULT 0 NOT NULL,
	"lat_7" bigint DEFAULT 0 NOT NULL,
	"lat_8" bigint DEFAULT 0 NOT NULL,
	"lat_9" bigint DEFAULT 0 NOT NULL,
	"lat_10" bigint DEFAULT 0 NOT NULL,
	"lat_11" bigint DEFAULT 0 NOT NULL,
	"lat_12" bigint DEFAULT 0 NOT NULL,
	"lat_13" bigint DEFAULT 0 NOT NULL,
	"lat_14" bigint DEFAULT 0 NOT NULL,
	"lat_15" bigint DEFAULT 0 NOT NULL,
	"guard_encodes" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "usage_hourly_hour_key_id_format_quality_outcome_pk" PRIMARY KEY("hour","key_id","format","quality","outcome")
);
--> statement-breakpoint
CREATE TABLE "usage_hourly_total" (
	"hour" bigint NOT NULL,
	"format" text NOT NULL,
	"quality" text NOT NULL,
	"outcome" text NOT NULL,
	"count" bigint NOT NULL,
	"bytes_in" bigint NOT NULL,
	"bytes_out" bigint NOT NULL,
	"convert_ms" bigint NOT NULL,
	"lat_0" bigint DEFAULT 0 NOT NULL,
	"lat_1" bigint DEFAULT 0 NOT NULL,
	"lat_2" bigint DEFAULT 0 NOT NULL,
	"lat_3" bigint DEFAULT 0 NOT NULL,
	"lat_4" bigint DEFAULT 0 NOT NULL,
	"lat_5" bigint DEFAULT 0 NOT NULL,
	"lat_6" bigint DEFAULT 0 NOT NULL,
	"lat_7" bigint DEFAULT 0 NOT NULL,
	"lat_8" bigint DEFAULT 0 NOT NULL,
	"lat_9" bigint DEFAULT 0 NOT NULL,
	"lat_10" bigint DEFAULT 0 NOT NULL,
	"lat_11" bigint DEFAULT 0 NOT NULL,
	"lat_12" bigint DEFAULT 0 NOT NULL,
	"lat_13" bigint DEFAULT 0 NOT NULL,
	"lat_14" bigint DEFAULT 0 NOT NULL,
	"lat_15" bigint DEFAULT 0 NOT NULL,
	"guard_encodes" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "usage_hourly_total_hour_format_quality_outcome_pk" PRIMARY KEY("hour","format","quality","outcome")
);
--> statement-breakpoint
CREATE INDEX "api_keys_owner" ON "api_keys" USING btree ("email","site_url");--> statement-breakpoint
CREATE INDEX "audit_events_at" ON "audit_events" USING btree ("at");--> statement-breakpoint
CREATE INDEX "audit_events_type_at" ON "audit_events" USING btree ("type","at");--> statement-breakpoint
CREATE INDEX "rate_events_bucket_at" ON "rate_events" USING btree ("bucket","at");--> statement-breakpoint
CREATE INDEX "seen_signatures_expires" ON "seen_signatures" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "staff_sessions_email" ON "staff_sessions" USING btree ("email");--> statement-breakpoint
CREATE INDEX "usage_hourly_key_hour" ON "usage_hourly" USING btree ("key_id","hour");