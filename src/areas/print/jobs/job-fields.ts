import { odataFields, type ODataFields } from '../../../query/odata.js';

/** The OData fields of `/v3/jobs/` (metadata route, $filter, $orderby, $select): API name -> SQL of print_jobs. */
export const JOB_FIELDS: ODataFields = odataFields([
  { name: 'id', sql: 'id', type: 'number', notNull: true, filterable: true, sortable: true, description: 'job id' },
  { name: 'status', sql: 'status', type: 'text', notNull: true, filterable: true, sortable: true, description: 'job state (see docs/api.md)' },
  { name: 'printer', sql: 'printer', type: 'text', notNull: true, filterable: true, sortable: true, description: 'printer the job prints on' },
  { name: 'user', sql: 'creator', type: 'text', filterable: true, sortable: true, description: 'user who submitted the job' },
  { name: 'owner', sql: 'owner', type: 'text', filterable: true, sortable: true, description: 'owner named at submission' },
  { name: 'name', sql: 'name', type: 'text', notNull: true, filterable: true, sortable: true, description: 'job name' },
  { name: 'fileName', sql: 'file_name', type: 'text', filterable: true, sortable: true, description: 'original file name' },
  { name: 'mimeType', sql: 'mime_type', type: 'text', notNull: true, filterable: true, sortable: true, description: 'media type of the document' },
  { name: 'size', sql: 'size', type: 'number', notNull: true, filterable: true, sortable: true, description: 'document size in bytes' },
  { name: 'copies', sql: 'copies', type: 'number', notNull: true, filterable: true, sortable: true, description: 'copies to print' },
  { name: 'priority', sql: 'priority', type: 'number', notNull: true, filterable: true, sortable: true, description: '0..100, higher prints first' },
  { name: 'pages', sql: 'pages', type: 'number', filterable: true, sortable: true, description: 'page count once known' },
  { name: 'checkin', sql: 'checkin', type: 'json', filterable: true, sortable: true, description: 'how the job came in', properties: ['type', 'source'] },
  { name: 'task', sql: 'task', type: 'json', filterable: true, sortable: true, description: 'the task it came from', properties: ['sid', 'tid', 'item'] },
  { name: 'flow', sql: 'flow', type: 'text', filterable: true, sortable: true, description: 'flow run in preprocessing' },
  { name: 'redirectedFrom', sql: 'redirected_from', type: 'text', filterable: true, sortable: true, description: 'printer the job was sent to before a redirect' },
  { name: 'message', sql: 'message', type: 'text', filterable: true, sortable: false, description: 'last processing or device message' },
  { name: 'created', sql: 'created', type: 'date', notNull: true, filterable: true, sortable: true, description: 'submission time' },
  { name: 'updated', sql: 'updated', type: 'date', notNull: true, filterable: true, sortable: true, description: 'last state change' },
  { name: 'finished', sql: 'finished', type: 'date', filterable: true, sortable: true, description: 'when it reached a final state' },
  { name: 'keepTempfiles', sql: 'keep_tempfiles', type: 'boolean', notNull: true, filterable: true, sortable: false, description: 'intermediate files kept' },
  { name: 'stages', sql: 'stages', type: 'json', filterable: false, sortable: false, description: 'intermediate files' },
  { name: 'retention', sql: 'retention_sec', type: 'number', filterable: false, sortable: false, description: 'seconds kept after finishing, and when it will be deleted' },
]);
