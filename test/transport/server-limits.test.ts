// What nats-server 2.9.10 limits from a configuration file, measured against the installed server:
// which settings it takes (and which it refuses as unknown), that the server-wide limits Cohort
// renders are the ones it reports and enforces, and the one per-user connection setting it has
// (`allowed_connection_types`).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect as netConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderAuthorization, renderServerConfig } from '../../src/transport/index.ts';
import { MEMBER_CONNECTION_TYPES } from '../../src/transport/permissions.ts';
import {
  federationServerLimits,
  type NatsServerLimits,
  renderServerLimits,
  SERVER_LIMIT_DEFAULTS,
} from '../../src/transport/server-config.ts';
import { findNatsServer, freePort, type NatsServerHandle, startNatsServer } from '../helpers/nats-server.ts';
import { nkeyUser } from '../helpers/nkey-user.ts';

const dir = mkdtempSync(join(tmpdir(), 'cohort-limits-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `nats-server -t -c <conf>`: '' when the server takes the file, else its complaint. */
function checkConfig(name: string, text: string): string {
  const file = join(dir, `${name}.conf`);
  writeFileSync(file, `listen: 127.0.0.1:-1\n${text}\n`);
  const r = spawnSync(findNatsServer(), ['-t', '-c', file], { encoding: 'utf8' });
  return r.status === 0 ? '' : `${r.stdout}${r.stderr}`;
}

/** Sends `line` on a raw client connection after CONNECT; the `-ERR` lines the server answered. */
function rawErrors(port: number, line: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = netConnect(port, '127.0.0.1');
    let out = '';
    let sent = false;
    const done = () =>
      resolve(
        out
          .split('\r\n')
          .filter((l) => l.startsWith('-ERR'))
          .join(' | '),
      );
    socket.on('data', (d) => {
      out += d.toString();
      if (!sent && out.includes('INFO')) {
        sent = true;
        socket.write(`CONNECT {"verbose":false}\r\n${line}`);
      }
    });
    socket.on('close', done);
    socket.on('error', () => undefined);
  });
}

describe('federationServerLimits', () => {
  it('sizes connections from the users and the payload from the largest unchunked message', () => {
    const small = federationServerLimits({ users: 9, largestMessageBytes: 200_000 });
    expect(small).toEqual({
      maxConnections: 9 * 4 + 16,
      maxSubscriptions: 64,
      maxPayload: 1024 * 1024,
      maxPending: 64 * 1024 * 1024,
      maxControlLine: 1024,
    });
    const big = federationServerLimits({ users: 3, largestMessageBytes: 3_000_001, connectionsPerUser: 2 });
    expect(big.maxConnections).toBe(3 * 2 + SERVER_LIMIT_DEFAULTS.spareConnections);
    expect(big.maxPayload).toBe(Math.ceil(3_000_001 / 1024) * 1024);
    expect(big.maxPending).toBe(Math.max(64 * 1024 * 1024, 8 * big.maxPayload));
    expect(() => federationServerLimits({ users: 0, largestMessageBytes: 1 })).toThrow(/users/);
    expect(() => federationServerLimits({ users: 1, largestMessageBytes: 65 * 1024 * 1024 })).toThrow(
      /largestMessageBytes/,
    );
    expect(() => federationServerLimits({ users: 1, largestMessageBytes: 1, connectionsPerUser: 0 })).toThrow(
      /connectionsPerUser/,
    );
  });

  it('renders them top level, an explicit max_payload winning, and refuses malformed ones', () => {
    const limits = federationServerLimits({ users: 5, largestMessageBytes: 10_000 });
    const text = renderServerConfig({
      listen: '127.0.0.1:4222',
      tls: { cert: '/t/server.crt', key: '/t/server.key.pem', ca: '/t/ca.crt' },
      authorization: '',
      limits,
      maxPayload: 2 * 1024 * 1024,
    });
    expect(text).toContain(`max_connections: ${limits.maxConnections}\n`);
    expect(text).toContain('max_subscriptions: 64\n');
    expect(text).toContain(`max_payload: ${2 * 1024 * 1024}\n`);
    expect(text).not.toContain(`max_payload: ${limits.maxPayload}\n`);
    expect(text).toContain(`max_pending: ${limits.maxPending}\n`);
    expect(text).toContain('max_control_line: 1024\n');
    expect(() => renderServerLimits({ ...limits, maxSubscriptions: 0 })).toThrow(/limits\.maxSubscriptions/);
    expect(() => renderServerLimits({ ...limits, maxPending: 1 })).toThrow(/limits\.maxPending/);
    expect(() => renderServerLimits({ ...limits, maxPayload: 65 * 1024 * 1024 })).toThrow(
      /limits\.maxPayload/,
    );
  });
});

describe('nats-server 2.9.10: what a configuration file can limit', () => {
  it('takes the server-wide limits and per-account limits, but no limit on a user', () => {
    expect(
      checkConfig('server', renderServerLimits(federationServerLimits({ users: 4, largestMessageBytes: 1 }))),
    ).toBe('');
    for (const field of ['max_connections', 'max_subscriptions', 'max_payload', 'account']) {
      const complaint = checkConfig(
        `user-${field}`,
        `authorization { users = [ { user: "a", password: "b", ${field}: 3 } ] }`,
      );
      expect(complaint).toContain(`unknown field "${field}"`);
    }
    // Per account: total connections, and subscriptions and payload per connection (a separate subject space).
    expect(
      checkConfig(
        'account',
        'accounts { A { users = [ { user: "a", password: "b" } ], limits { max_connections: 2, max_subscriptions: 3, max_payload: 2000, max_leafnodes: 0 } } }',
      ),
    ).toBe('');
    expect(checkConfig('account-bogus', 'accounts { A { limits { max_streams: 1 } } }')).toContain(
      'Unknown field "max_streams" parsing account limits',
    );
  });
});

describe('nats-server 2.9.10 enforces the rendered limits', () => {
  const limits: NatsServerLimits = {
    maxConnections: 6,
    maxSubscriptions: 5,
    maxPayload: 65_536,
    maxPending: 1024 * 1024,
    maxControlLine: 512,
  };
  let server: NatsServerHandle;
  let monitor: number;
  const held: NatsConnection[] = [];

  beforeAll(async () => {
    monitor = await freePort();
    server = await startNatsServer({ config: `${renderServerLimits(limits)}\nhttp: "127.0.0.1:${monitor}"` });
  });

  afterAll(async () => {
    for (const c of held) await c.close().catch(() => undefined);
    await server?.stop();
  });

  it('reports each limit as rendered', async () => {
    const varz = (await (await fetch(`http://127.0.0.1:${monitor}/varz`)).json()) as Record<string, unknown>;
    expect(varz).toMatchObject({
      max_connections: limits.maxConnections,
      max_subscriptions: limits.maxSubscriptions,
      max_payload: limits.maxPayload,
      max_pending: limits.maxPending,
      max_control_line: limits.maxControlLine,
    });
  });

  it('refuses a subscription beyond max_subscriptions and keeps the connection', async () => {
    const nc = await connect({ servers: server.url, reconnect: false });
    held.push(nc);
    const errors: string[] = [];
    void (async () => {
      for await (const s of nc.status()) if (s.type === 'error') errors.push(String(s.error?.message));
    })();
    let heard = 0;
    for (let i = 0; i < limits.maxSubscriptions + 3; i++) {
      nc.subscribe('t.limits.subs', {
        callback: () => {
          heard++;
        },
      });
    }
    await nc.flush();
    nc.publish('t.limits.subs', 'x');
    await nc.flush();
    for (let i = 0; i < 50 && (heard < limits.maxSubscriptions || errors.length < 3); i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(errors).toEqual(Array(3).fill('maximum subscriptions exceeded'));
    expect(heard).toBe(limits.maxSubscriptions);
    expect(nc.isClosed()).toBe(false);
  });

  it('closes a connection that sends more than max_payload or a longer protocol line', async () => {
    expect(await rawErrors(server.port, `PUB t.big 70000\r\n${'x'.repeat(70_000)}\r\n`)).toBe(
      "-ERR 'Maximum Payload Violation'",
    );
    expect(await rawErrors(server.port, `PUB t.${'z'.repeat(600)} 1\r\nx\r\n`)).toBe(
      "-ERR 'maximum control line exceeded'",
    );
  });

  it('refuses a connection beyond max_connections', async () => {
    let refused = '';
    while (refused === '' && held.length < 2 * limits.maxConnections) {
      try {
        held.push(await connect({ servers: server.url, reconnect: false, timeout: 3000 }));
      } catch (err) {
        refused = (err as Error).message;
      }
    }
    // The monitoring connection is HTTP: every one of the limit's slots went to a client.
    expect(held).toHaveLength(limits.maxConnections);
    expect(await rawErrors(server.port, '')).toBe("-ERR 'maximum connections exceeded'");
    expect(refused).not.toBe('');
  });
});

describe('allowed_connection_types: the one per-user connection setting', () => {
  it('lets a member connect only as a NATS client; a user allowed only websockets is refused', async () => {
    expect(MEMBER_CONNECTION_TYPES).toEqual(['STANDARD']);
    const member = nkeyUser('member', { allow: ['t.>'] }, { allow: ['t.>'] });
    const wsOnly = nkeyUser('ws-only', { allow: ['t.>'] }, { allow: ['t.>'] });
    const users = [
      { ...member.user, allowedConnectionTypes: MEMBER_CONNECTION_TYPES },
      { ...wsOnly.user, allowedConnectionTypes: ['WEBSOCKET'] as const },
    ];
    const block = renderAuthorization(users);
    expect(block).toContain('allowed_connection_types: ["STANDARD"]');
    expect(() =>
      renderAuthorization([{ ...member.user, allowedConnectionTypes: ['TELNET' as 'MQTT'] }]),
    ).toThrow(/allowedConnectionTypes/);
    expect(() => renderAuthorization([{ ...member.user, allowedConnectionTypes: [] }])).toThrow(
      /allowedConnectionTypes/,
    );
    const server = await startNatsServer({ users });
    try {
      const ok = await connect({
        servers: server.url,
        authenticator: member.authenticator,
        reconnect: false,
      });
      await ok.close();
      const refused = await connect({
        servers: server.url,
        authenticator: wsOnly.authenticator,
        reconnect: false,
      }).then(
        async (nc) => {
          await nc.close();
          return 'connected';
        },
        (err: Error) => err.message,
      );
      expect(refused).toMatch(/Authorization Violation/i);
    } finally {
      await server.stop();
    }
  });
});
