import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fillSql, sqlFile, sqlParts } from '../../src/storage/sql-file.js';

/** Statements kept in .sql files: the header left out, `:name` variables filled, parts for fused statements. */
describe('sql files', () => {
  let dir: string;
  const file = async (name: string, text: string) => {
    await writeFile(path.join(dir, name), text);
    return pathToFileURL(path.join(dir, name));
  };
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'wcr-sql-file-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('sends the statement without its header, variables filled, casts and inner comments kept', async () => {
    const url = await file('a.sql', '-- a: what it does\n--   :cols  the columns\n\nSELECT :cols FROM t -- why\n  WHERE id = $1::bigint AND note = \'at 10:30\'\n');
    expect(sqlFile(url, { cols: 'id, name' })).toBe("SELECT id, name FROM t -- why\n  WHERE id = $1::bigint AND note = 'at 10:30'");
    // a name not given is left alone; one given and not used is an error
    expect(sqlFile(url)).toBe("SELECT :cols FROM t -- why\n  WHERE id = $1::bigint AND note = 'at 10:30'");
    expect(() => sqlFile(url, { cols: 'id', rows: 'x' })).toThrow(/:rows not used/);
  });

  it('fills a variable wherever it stands, and not inside a longer name', () => {
    expect(fillSql('a AND :after OR :after_all', { after: 'true' })).toBe('a AND true OR :after_all');
    // a cast is no variable: `text` stays unused
    expect(() => fillSql('x::text', { text: 'no' }, 'cast')).toThrow(/cast: :text not used/);
  });

  it('splits a statement into the parts another module assembles', async () => {
    const url = await file('b.sql', '-- b: header\n-- @with\nsent AS (SELECT 1)\n-- @text\nINSERT INTO t SELECT :v\n');
    expect(sqlParts(url, ['with', 'text'], { v: '2' })).toEqual({ with: 'sent AS (SELECT 1)', text: 'INSERT INTO t SELECT 2' });
    expect(() => sqlParts(url, ['with', 'text', 'also'])).toThrow(/expected with, text, also/);
  });
});
