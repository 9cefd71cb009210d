CREATE TABLE `database_facts` (
	`name` text PRIMARY KEY NOT NULL,
	`value` text NOT NULL
);
