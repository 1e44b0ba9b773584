import type { Migration } from './index.js';

/**
 * Small print documents stored with their job: a submission of up to
 * `INLINE_DOCUMENT_MAX` bytes (src/areas/print-jobs/job-document.ts) writes its
 * bytes here, in the same statement and commit as the job row, instead of a
 * blob file. The commit makes them durable (WAL, group commit with the other
 * submissions) where a blob file needed its own fsync and one of its directory
 * (and of new fan-out directories), which halved the dispatch benchmark's end
 * to end rate (docs/benchmarks.md). A job with no row here has its document in
 * the blob store (`blob_sha256`), as every job before this migration.
 *
 *   job_id  the job; the document goes with it (retention, delete)
 *   bytes   the document as submitted; `blob_sha256` and `size` of the job
 *           describe it as for a blob. Stored uncompressed (print data is
 *           mostly compressed already), in the row up to about 8 KB
 *           (`toast_tuple_target`: read without a TOAST lookup), out of line
 *           when larger.
 */
export const m016PrintDocuments: Migration = {
  id: 16,
  name: 'print-documents',
  sql: `
CREATE TABLE print_documents (
  job_id bigint PRIMARY KEY REFERENCES print_jobs (id) ON DELETE CASCADE,
  bytes bytea NOT NULL
);
ALTER TABLE print_documents ALTER COLUMN bytes SET STORAGE EXTERNAL;
ALTER TABLE print_documents SET (toast_tuple_target = 8160);
`,
};
