-- submit-targets: `submit-target` for several submissions at once
-- (submission.ts `submitTargets`, gathered by submit-print-job.ts): one
-- redirect chain per submission, keyed by its position `k`.
--
-- Parameters (one element per submission, in order):
--   $1  text[]     the printer each job is sent to
--   $2  boolean[]  true: the job runs its printer's flow; false: the flow of $3
--   $3  text[]     the flow named (NULL: none)
--
-- Locks: none (each insert checks its chain's end again under a share lock).
-- Returns: one row per submission whose printer exists: `k` (from 1),
-- `target` (where its chain ends), `flow` and `flow_exists`; a submission
-- without a row names no printer.
WITH RECURSIVE i AS (SELECT * FROM unnest($1::text[], $2::boolean[], $3::text[]) WITH ORDINALITY AS i(printer, own_flow, flow, k)),
chain(k, name, redirect, depth) AS (
  SELECT i.k, p.name, p.redirect, 0 FROM i JOIN printers p ON p.name = i.printer
  UNION ALL
  SELECT c.k, p.name, p.redirect, c.depth + 1 FROM printers p JOIN chain c ON p.name = c.redirect WHERE c.depth < 64),
chain_end AS (SELECT DISTINCT ON (k) k, name FROM chain ORDER BY k, depth DESC)
SELECT i.k, e.name AS target, f.flow, EXISTS (SELECT 1 FROM print_flows WHERE name = f.flow) AS flow_exists
  FROM i JOIN printers p ON p.name = i.printer JOIN chain_end e ON e.k = i.k
  CROSS JOIN LATERAL (SELECT CASE WHEN i.own_flow THEN p.flow ELSE i.flow END AS flow) f
