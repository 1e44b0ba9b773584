import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, type TestClient } from '../../helpers/client.js';
import { eventually, startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';
import { SseClient } from '../../helpers/sse-client.js';

/**
 * `GET /v1/sessions` (spec: Functions, sessions, identity provider; DESIGN.md
 * section 6): the distinct OIDC sessions (`sid`, else token id) of the
 * caller seen on any API process while their token is valid, plus those an
 * open event stream holds. Real PostgreSQL and Redis, two API processes'
 * worth of runtimes on one database.
 */

let rt: TestRuntime;
let other: TestRuntime;

const count = async (c: TestClient) => {
  const res = await c.get('/v1/sessions');
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.count as number;
};

beforeAll(async () => {
  // one issuer for both processes: the development issuer's key is shared through DATA_DIR, its URL fixed here
  const auth = { devIssuerUrl: 'http://127.0.0.1:9/dev-issuer', roles: { guest: { areas: { documents: { scope: 'own', actions: ['read'] } } } } };
  // an open stream's session is held for two heartbeats and 5 s past each round
  const events = { heartbeatMs: 1000 };
  rt = await startTestRuntime({ overrides: { auth, events } });
  // a second API process on the same database
  other = await startTestRuntime({ shareWith: rt, parts: { api: true, workers: false }, overrides: { auth, events } });
});
afterAll(async () => {
  await other.close();
  await rt.close();
});

describe('GET /sessions', () => {
  it('counts the caller\'s own session', async () => {
    const ann = rt.client.withToken(await rt.token('ann', ['user']));
    expect(await count(ann)).toBe(1);
    expect(await count(ann)).toBe(1);
  });

  it('counts distinct sessions seen on any API process; tokens of one session count once; other users never', async () => {
    const t1 = await rt.token('bea', ['user'], { claims: { sid: 'bea-laptop' } });
    const t2 = await rt.token('bea', ['user'], { claims: { sid: 'bea-laptop' } }); // a refreshed token of the same session
    const t3 = await rt.token('bea', ['readonly'], { claims: { sid: 'bea-phone' } });
    await rt.client.withToken(t1).get('/v1/services');
    await rt.client.withToken(t2).get('/v1/services');
    expect(await count(rt.client.withToken(t1))).toBe(1);
    // seen on the other process only (and on the print API: a session is a session)
    expect((await other.client.withToken(t3).get('/v3/jobs/')).status).toBe(200);
    expect(await count(rt.client.withToken(t1))).toBe(2);
    expect(await count(other.client.withToken(t2))).toBe(2);
    // somebody else's sessions are not the caller's
    await rt.client.withToken(await rt.token('cid', ['user'])).get('/v1/services');
    expect(await count(rt.client.withToken(t3))).toBe(2);
    // the same person under another identity (email) is the same user
    const viaMail = await rt.token('bea', ['user'], { email: 'bea@example.com', claims: { sid: 'bea-tablet' } });
    expect(await count(rt.client.withToken(viaMail))).toBe(3);
  });

  it('stops counting a session once its token expired, unless an open event stream holds it; a closed stream\'s session lapses', async () => {
    const short = await rt.token('dan', ['user'], { expiresIn: 2, claims: { sid: 'dan-short' } });
    const held = await rt.token('dan', ['user'], { expiresIn: 2, claims: { sid: 'dan-stream' } });
    const long = rt.client.withToken(await rt.token('dan', ['user'], { claims: { sid: 'dan-long' } }));
    await rt.client.withToken(short).get('/v1/services');
    expect(await count(long)).toBe(2);
    // the stream is open on the other API process; the count is the same from both
    const stream = await SseClient.open(`${other.url}/v1/events`, held);
    try {
      expect(stream.status).toBe(200);
      await eventually(async () => ((await count(long)) === 3 ? true : undefined), 5000, 50);
      expect(other.services.sessions.openStreams).toBe(1);
      // both short tokens' `exp` passes (whole seconds: wait past the next one); the stream outlives its token's expiry
      await new Promise((r) => setTimeout(r, 3100));
      expect(await count(long)).toBe(2);
    } finally {
      stream.close();
    }
    await eventually(async () => (other.services.sessions.openStreams === 0 ? true : undefined), 5000, 20);
    // no longer held: gone once its last hold (two heartbeats and 5 s) passes
    await eventually(async () => ((await count(long)) === 1 ? true : undefined), 15_000, 200);
  }, 30_000);

  it('403 without the sessions right', async () => {
    expectError(await rt.client.withToken(await rt.token('gus', ['guest'])).get('/v1/sessions'), 403, 'FORBIDDEN');
  });

  it('housekeeping removes sessions dead for an hour', async () => {
    await rt.client.withToken(await rt.token('eve', ['user'], { claims: { sid: 'eve-old' } })).get('/v1/services');
    await rt.services.db.query(`UPDATE sessions SET expires = now() - interval '2 hours' WHERE session = 'eve-old'`);
    expect(await rt.services.sessions.removeDead()).toBeGreaterThanOrEqual(1);
    const { rows } = await rt.services.db.query(`SELECT 1 FROM sessions WHERE session = 'eve-old'`);
    expect(rows).toHaveLength(0);
  });
});
