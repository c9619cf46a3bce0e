import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InvalidArgumentError } from '../errors/index.ts';
import type { MetricsProvider } from './metrics-provider.ts';

/** A running `/metrics` endpoint. */
export interface MetricsServer {
  /** `http://host:port/metrics`, with the port bound (useful when asked for port 0). */
  readonly url: string;
  /** Stops listening; resolves once closed. */
  close(): Promise<void>;
}

/** Where {@link serveMetrics} listens. */
export interface MetricsListen {
  /** Address to bind: loopback (`127.0.0.1`) unless a Prometheus elsewhere must reach it. */
  readonly host: string;
  /** Port (0: any free port, see {@link MetricsServer.url}). */
  readonly port: number;
}

/**
 * Serves `provider`'s exposition at `GET /metrics` (plain HTTP, no token: bind it to loopback or
 * to a network only Prometheus reaches). Any other path is 404, any other method 405; a scrape
 * that fails answers 500 and the error is handed to `onError`.
 */
export async function serveMetrics(
  provider: MetricsProvider,
  listen: MetricsListen,
  onError: (err: unknown) => void = () => {},
): Promise<MetricsServer> {
  if (!Number.isInteger(listen.port) || listen.port < 0 || listen.port > 65_535) {
    throw new InvalidArgumentError(`listen.port is ${listen.port}, expects an integer in 0..65535`, {
      details: { name: 'listen.port' },
    });
  }
  if (typeof listen.host !== 'string' || listen.host === '') {
    throw new InvalidArgumentError('listen.host must be a non-empty string', {
      details: { name: 'listen.host' },
    });
  }
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: only /metrics is served\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('method not allowed\n');
      return;
    }
    provider.text().then(
      (text) => {
        res.writeHead(200, { 'content-type': provider.contentType });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      (err: unknown) => {
        onError(err);
        res.writeHead(500, { 'content-type': 'text/plain' }).end('the scrape failed\n');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}/metrics`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
