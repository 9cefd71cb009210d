CREATE TABLE "refused_daily_total" (
	"day" bigint NOT NULL,
	"code" text NOT NULL,
	"count" integer NOT NULL,
	CONSTRAINT "refused_daily_total_day_code_pk" PRIMARY KEY("day","code")
);
--> statement-breakpoint
CREATE TABLE "refused_hourly" (
	"hour" bigint NOT NULL,
	"kind" text NOT NULL,
	"client" text NOT NULL,
	"code" text NOT NULL,
	"count" integer NOT NULL,
	"last_at" bigint NOT NULL,
	CONSTRAINT "refused_hourly_hour_kind_client_code_pk" PRIMARY KEY("hour","kind","client","code")
);
--> statement-breakpoint
CREATE INDEX "refused_hourly_client_hour" ON "refused_hourly" USING btree ("kind","client","hour");