import { odataFields, type ODataFields } from '../../../query/odata.js';

/** The OData fields of `/v3/printers/`: API name -> SQL of printers (alias `p`). */
export const PRINTER_FIELDS: ODataFields = odataFields([
  { name: 'name', sql: 'p.name', type: 'text', notNull: true, filterable: true, sortable: true, description: 'printer name (any Unicode)' },
  { name: 'connection', sql: 'p.connection', type: 'text', notNull: true, filterable: true, sortable: true, description: 'device URL: file:///dir, socket://host:9100, ipp://, lpr://' },
  { name: 'description', sql: 'p.description', type: 'text', filterable: true, sortable: true, description: 'free text' },
  { name: 'location', sql: 'p.location', type: 'text', filterable: true, sortable: true, description: 'where it stands' },
  { name: 'enabled', sql: 'p.enabled', type: 'boolean', notNull: true, filterable: true, sortable: true, description: 'false: disabled, holds its queue' },
  { name: 'flow', sql: 'p.flow', type: 'text', filterable: true, sortable: true, description: 'default flow of its jobs' },
  { name: 'paused', sql: 'p.paused', type: 'boolean', notNull: true, filterable: true, sortable: true, description: 'paused: holds its queue' },
  { name: 'redirect', sql: 'p.redirect', type: 'text', filterable: true, sortable: true, description: 'printer its jobs go to instead' },
  { name: 'message', sql: 'p.message', type: 'json', filterable: true, sortable: false, description: 'operator message', properties: ['text', 'user', 'date'] },
  { name: 'physical', sql: 'p.physical', type: 'json', filterable: true, sortable: false, description: 'last device check', properties: ['reachable', 'message', 'checked'] },
  { name: 'runtime', sql: 'NULL', type: 'json', filterable: false, sortable: false, description: 'status, currentJob, lastPrintedJobTime, queuedJobs, redirect' },
  { name: 'lastPrinted', sql: 'p.last_printed', type: 'date', filterable: true, sortable: true, description: 'when it last finished a job' },
  { name: 'created', sql: 'p.created', type: 'date', notNull: true, filterable: true, sortable: true, description: 'when it was created' },
  { name: 'updated', sql: 'p.updated', type: 'date', notNull: true, filterable: true, sortable: true, description: 'last change' },
]);
