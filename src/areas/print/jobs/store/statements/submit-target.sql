-- submit-target: what a submission needs to know about its printer before it
-- reads the document (submission.ts `submitTarget`), in one statement.
--
--   :redirect_chain  printer-store.ts `redirectChain` from the printer $1
--                    (the CTE `chain(name, redirect, depth)`)
--   :chain_end       printer-store.ts CHAIN_END: the chain's last printer
--
-- Parameters:
--   $1  text     the printer the job is sent to
--   $2  boolean  true: the job runs the printer's flow; false: the flow $3
--   $3  text     the flow named by the submission (NULL: none)
--
-- Locks: none (the insert checks the chain's end again under a share lock).
-- Returns: no row when there is no printer $1; else `target` (where the
-- chain ends), `flow` (the job's) and `flow_exists`.
WITH RECURSIVE :redirect_chain
SELECT chain_end.name AS target, f.flow, EXISTS (SELECT 1 FROM print_flows WHERE name = f.flow) AS flow_exists
  FROM printers p CROSS JOIN :chain_end
  CROSS JOIN LATERAL (SELECT CASE WHEN $2::boolean THEN p.flow ELSE $3::text END AS flow) f
 WHERE p.name = $1
