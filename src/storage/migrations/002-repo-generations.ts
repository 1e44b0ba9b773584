import type { Migration } from './index.js';

/**
 * A counter per service that moves whenever any entry of that service changes,
 * kept by statement-level triggers (one upsert per statement, not per row, so
 * bulk inserts stay cheap). Listing caches compare it to know they are current.
 */
export const m002RepoGenerations: Migration = {
  id: 2,
  name: 'repo-generations',
  sql: `
CREATE TABLE repo_generations (
  sid text PRIMARY KEY,
  gen bigint NOT NULL DEFAULT 0
);

CREATE FUNCTION bump_repo_generation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    INSERT INTO repo_generations (sid, gen) SELECT DISTINCT sid, 1 FROM old_rows
      ON CONFLICT (sid) DO UPDATE SET gen = repo_generations.gen + 1;
  ELSE
    INSERT INTO repo_generations (sid, gen) SELECT DISTINCT sid, 1 FROM new_rows
      ON CONFLICT (sid) DO UPDATE SET gen = repo_generations.gen + 1;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER entries_gen_insert AFTER INSERT ON entries
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bump_repo_generation();
CREATE TRIGGER entries_gen_update AFTER UPDATE ON entries
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bump_repo_generation();
CREATE TRIGGER entries_gen_delete AFTER DELETE ON entries
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION bump_repo_generation();
`,
};
