/**
 * The `application_name` of every PostgreSQL session this process opens
 * (`wcr:<pid>`): `pg_stat_activity` tells which process a session belongs
 * to, and a test that killed a process can wait until its last statement
 * has ended.
 */
export const APPLICATION_NAME = `wcr:${process.pid}`;
