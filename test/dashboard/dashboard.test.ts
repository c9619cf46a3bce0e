// The operator dashboard in headless Chromium against a running federation: a real nats-server,
// coordinator, aggregator and two sites training logistic regression on their own WDBC rows (a data
// contract: round 1 gathers the federated statistics, every later COMMIT carries the federated
// evaluation). Through the admin API an operator runs three rounds (all COMMIT); then, with the
// sites replaced by heartbeats so the next round stays open, round 4 is aborted with a hostile
// reason. The page must show all of it, with the log verified, run nothing it was sent, and offer
// each token only the controls the API accepts from it.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import type { Browser, BrowserContext, Page, Response } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildAdminApi, coordinatorAdminDeps, DASHBOARD_CSP } from '../../src/admin/index.ts';
import { coordinatorAdminServices } from '../../src/cli/commands/coordinator-admin.ts';
import { type CohortConfigInput, parseSiteConfig } from '../../src/config/index.ts';
import { wdbcPath } from '../../src/data/index.ts';
import { type AgentService, startAgent } from '../../src/services/agent/index.ts';
import type { CoordinatorHandle, RoundSummary } from '../../src/services/coordinator/index.ts';
import { auth, TOKEN, TOKENS } from '../admin/admin-fixture.ts';
import { Federation, waitFor } from '../helpers/federation.ts';
import { startHeartbeats } from '../helpers/heartbeats.ts';
import { CHROMIUM, launchChromium, NO_CHROMIUM, watchErrors } from './chromium.ts';

const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));
/** An ABORT reason that would run script if the page parsed it as HTML. */
const HOSTILE = `<img src=x onerror="document.title='pwned';window.__pwned=1"><script>window.__pwned=2</script>`;
/** Longest wait for the page to show something, ms. */
const SHOWN_MS = 20_000;

/** Polls what the page shows until it matches (or {@link SHOWN_MS} pass). */
const shown = <T>(fn: () => T | Promise<T>) => expect.poll(fn, { timeout: SHOWN_MS, interval: 100 });

describe.skipIf(CHROMIUM === undefined)(
  `the dashboard in Chromium${CHROMIUM === undefined ? ` (skipped: ${NO_CHROMIUM})` : ''}`,
  () => {
    let f: Federation;
    let dir: string;
    let coordinator: CoordinatorHandle;
    let app: FastifyInstance;
    let url: string;
    let browser: Browser;
    const agents: AgentService[] = [];
    const decisions: RoundSummary[] = [];
    const timers: NodeJS.Timeout[] = [];

    async function call(method: 'GET' | 'POST', path: string, scope: keyof typeof TOKEN, body?: unknown) {
      return fetch(`${url}${path}`, {
        method,
        headers: { ...auth(scope), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    }

    /** Plays `site` by heartbeats alone (at the current head): live, but it never trains. */
    async function heartbeats(site: string): Promise<void> {
      const m = await f.member(site);
      timers.push(
        startHeartbeats(m, 'site', () => {
          const stats = coordinator.stats();
          return { head: new Uint8Array(Buffer.from(stats.head, 'hex')), height: stats.height };
        }),
      );
    }

    beforeAll(async () => {
      // Two sites with their own WDBC rows, a quarter of each held out for the federated evaluation.
      const lines = readFileSync(wdbcPath(), 'utf8').trim().split(/\r?\n/);
      const header = lines[0]!.split(',');
      const overrides: Partial<CohortConfigInput> = {
        data: {
          kind: 'tabular',
          features: header.slice(0, -1).map((name) => ({ name, type: 'number' })),
          label: { name: 'diagnosis', classes: [0, 1] },
          preprocessing: { standardize: 'federated' },
        },
        learning: { model: 'logreg', epochs: 1, batchSize: 10, learningRate: 0.05 },
        round: {
          heartbeatMs: 100,
          missedHeartbeats: 20,
          deadlineMs: 60_000,
          voteTimeoutMs: 15_000,
          minContributors: 2,
        },
        log: { level: 'error' },
      };
      f = await Federation.create('dash', { aggregators: 1, sites: 2, overrides });
      dir = mkdtempSync(join(tmpdir(), 'cohort-dashboard-'));
      await f.startAggregator(f.dep.aggregators[0]!);
      for (const [i, site] of f.dep.sites.entries()) {
        const path = join(dir, `${site}.csv`);
        writeFileSync(path, `${lines[0]}\n${lines.slice(1 + i * 140, 1 + (i + 1) * 140).join('\n')}\n`);
        const siteConfig = parseSiteConfig({
          data: { csv: { path } },
          validation: { fraction: 0.25, seed: 1 },
        });
        agents.push(await startAgent(await f.member(site), { siteConfig }));
      }
      let started = false;
      coordinator = f.startCoordinator({
        idle: true,
        switchWaitMs: 500,
        onEvent: (e) => {
          if (e.type === 'started') started = true;
          if (e.type === 'decision') decisions.push(e.summary);
        },
      });
      await waitFor('the coordinator started', () => started, 20_000);
      const services = coordinatorAdminServices(f.dep.config, f.coord);
      app = buildAdminApi(
        coordinatorAdminDeps({
          handle: coordinator,
          member: f.coord,
          config: f.dep.config,
          verifyLog: services.verifyLog,
        }),
        { tokens: TOKENS },
      );
      await app.listen({ host: '127.0.0.1', port: 0 });
      const address = app.server.address();
      url = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;

      // Three rounds through the API: the federated statistics (no evaluation), then two trained.
      await waitFor('both sites live', () => coordinator.stats().liveSites.length === 2, 20_000);
      const run = await call('POST', '/v1/runs', 'operator', { rounds: 3, label: 'dashboard' });
      expect(run.status, await run.clone().text()).toBe(201);
      await waitFor('three decisions', () => decisions.length === 3, 60_000);
      expect(decisions.map((d) => [d.round, d.kind, d.commit, d.reason])).toEqual([
        [1, 'statistics', true, ''],
        [2, 'round', true, ''],
        [3, 'round', true, ''],
      ]);
      // The sites stop training; heartbeats keep them live, so round 4 opens and waits.
      for (const agent of agents.splice(0)) await agent.stop();
      for (const site of f.dep.sites) await heartbeats(site);
      await waitFor('run-1 completed', () => coordinator.runs()[0]?.state === 'completed', 20_000);
      expect((await call('POST', '/v1/runs', 'operator', { rounds: 1 })).status).toBe(201);
      await waitFor('round 4 open', () => coordinator.stats().phase === 'collecting', 20_000);
      const abort = await call('POST', '/v1/rounds/4/abort', 'operator', { reason: HOSTILE });
      expect(abort.status, await abort.clone().text()).toBe(202);
      await waitFor('the ABORT of round 4', () => decisions.length === 4, 20_000);
      await waitFor('run-2 completed', () => coordinator.runs()[1]?.state === 'completed', 20_000);

      browser = await launchChromium();
    }, 120_000);

    afterAll(async () => {
      for (const t of timers) clearInterval(t);
      await browser?.close();
      await app?.close();
      for (const agent of agents) await agent.stop().catch(() => undefined);
      await f?.stop();
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    });

    interface Opened {
      readonly page: Page;
      /** Page errors and console errors so far (CSP violations included). */
      readonly errors: string[];
      readonly response: Response;
    }

    /**
     * Runs `fn` on a fresh context and page signed in with `scope`'s token, then checks the page
     * reported no error. On failure it saves `test-artifacts/dashboard-<name>-failed.png`; `keep`
     * saves the page as `test-artifacts/<keep>` whatever the outcome.
     */
    async function withDashboard(
      scope: keyof typeof TOKEN,
      name: string,
      fn: (o: Opened) => Promise<void>,
      keep?: string,
    ): Promise<void> {
      const context: BrowserContext = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      const shot = async (file: string) => {
        mkdirSync(ARTIFACTS, { recursive: true });
        await page.screenshot({ path: join(ARTIFACTS, file), fullPage: true }).catch(() => undefined);
      };
      try {
        const errors = watchErrors(page);
        const response = await page.goto(`${url}/dashboard/`);
        await page.getByTestId('token-input').fill(TOKEN[scope]);
        await page.getByRole('button', { name: 'Connect' }).click();
        await page.getByTestId('round-row').first().waitFor({ timeout: SHOWN_MS });
        await fn({ page, errors, response: response! });
        expect(errors).toEqual([]);
      } catch (err) {
        await shot(`dashboard-${name}-failed.png`);
        throw err;
      } finally {
        if (keep !== undefined) await shot(keep);
        await context.close();
      }
    }

    /** Rows of a table, by the value of an attribute. */
    const attrs = (page: Page, testId: string, attr: string) =>
      page.getByTestId(testId).evaluateAll((els, a) => els.map((e) => e.getAttribute(a)), attr);

    it('shows the committed rounds, their evaluation, the sites, the tree and the verified history', async () => {
      await withDashboard(
        'operator',
        'overview',
        async ({ page, response }) => {
          expect(response.headers()['content-security-policy']).toBe(DASHBOARD_CSP);
          expect(response.headers()['x-content-type-options']).toBe('nosniff');
          await shown(() => page.getByTestId('status-phase').textContent()).toBe('waiting');
          expect(await page.getByTestId('status-height').textContent()).toBe('3');
          expect(await page.getByTestId('status-head').textContent()).toBe(
            coordinator.stats().head.slice(0, 12),
          );
          expect(await page.getByTestId('session-who').textContent()).toBe('ops (operator)');

          // A row per round, newest first: the three COMMITs and the ABORT.
          await shown(() => attrs(page, 'round-row', 'data-round')).toEqual(['4', '3', '2', '1']);
          expect(await attrs(page, 'round-row', 'data-status')).toEqual([
            'abort',
            'commit',
            'commit',
            'commit',
          ]);
          const outcomes = await page.locator('[data-testid="round-row"] td.outcome').allTextContents();
          expect(outcomes).toEqual(['ABORT', 'COMMIT', 'COMMIT', 'COMMIT']);

          // One accuracy point per committed round with an evaluation (not the statistics round).
          const rounds = (await (await call('GET', '/v1/rounds', 'auditor')).json()) as {
            status: string;
            evaluation: { examples: number; correct: number } | null;
          }[];
          const evaluated = rounds.filter((r) => r.status === 'commit' && (r.evaluation?.examples ?? 0) > 0);
          expect(evaluated.length).toBe(2);
          await shown(() => page.getByTestId('accuracy-point').count()).toBe(evaluated.length);
          expect(await page.getByTestId('loss-point').count()).toBe(evaluated.length);
          const titles = await page.locator('[data-testid="accuracy-point"] title').allTextContents();
          const last = evaluated[0]!.evaluation!;
          expect(titles.at(-1)).toBe(
            `round 3: accuracy ${((100 * last.correct) / last.examples).toFixed(2)}%`,
          );
          expect(await page.getByTestId('timing-bar').count()).toBe(4);

          // Sites and aggregator, with the sites each contributed to.
          expect(await attrs(page, 'site-row', 'data-id')).toEqual(['site-1', 'site-2', 'agg-1']);
          const site1 = page.locator('[data-testid="site-row"][data-id="site-1"] td');
          expect(await site1.last().textContent()).toBe('round 3 (@3)');

          // The tree: the latest round's aggregator and the sites assigned to it.
          const agg = page.locator('[data-testid="tree-aggregator"][data-id="agg-1"]');
          await agg.waitFor({ timeout: SHOWN_MS });
          expect(
            await agg.getByTestId('tree-site').evaluateAll((els) => els.map((e) => e.dataset.id)),
          ).toEqual(['site-1', 'site-2']);
          expect(await page.getByTestId('tree-round').textContent()).toBe('Assignments of round 4 (abort).');

          // The version history, with the live log verified by the coordinator's audit.
          await shown(() => page.getByTestId('audit-status').getAttribute('data-verified')).toBe('true');
          expect(await page.getByTestId('audit-problems').locator('li').count()).toBe(0);
          expect(await page.getByTestId('audit-status').textContent()).toMatch(/^Log verified at /);
          expect(await attrs(page, 'version-row', 'data-height')).toEqual(['3', '2', '1', '0']);
          expect(await page.getByTestId('version-audit').allTextContents()).toEqual([
            'verified, aggregate checked',
            'verified, aggregate checked',
            'verified, aggregate checked',
            'trusted genesis',
          ]);

          // An operator runs the federation: run controls, no rollback (an admin's).
          expect(await page.getByRole('button', { name: 'Start run' }).isVisible()).toBe(true);
          expect(await page.getByRole('button', { name: /roll back/i }).count()).toBe(0);
        },
        'dashboard.png',
      );
    });

    it('shows a hostile ABORT reason as text and runs nothing', async () => {
      await withDashboard('auditor', 'hostile', async ({ page }) => {
        const reason = page.locator('[data-testid="round-row"][data-round="4"] [data-testid="round-reason"]');
        await shown(() => reason.textContent()).toBe(`aborted by ops (admin API): ${HOSTILE}`);
        expect(await reason.locator('img, script').count()).toBe(0);
        expect(await page.locator('main img, main script').count()).toBe(0);
        expect(await page.title()).toBe('Cohort dashboard');
        expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined();
      });
    });

    it('offers each token only the controls the API accepts from it', async () => {
      const controls = /start run|stop run|abort open round|roll back/i;
      await withDashboard('auditor', 'auditor', async ({ page }) => {
        await page.getByTestId('version-row').first().waitFor({ timeout: SHOWN_MS });
        expect(await page.getByRole('button', { name: controls }).count()).toBe(0);
        expect(await page.getByTestId('controls').isVisible()).toBe(false);
      });
      // Called anyway, the API refuses the auditor's token, and nothing is logged.
      const before = (await f.logEntries()).length;
      for (const [path, body] of [
        ['/v1/runs', { rounds: 1 }],
        ['/v1/runs/run-2/stop', undefined],
        ['/v1/rounds/5/abort', { reason: 'x' }],
        ['/v1/versions/rollback', { target: '@1' }],
      ] as const) {
        const res = await call('POST', path, 'auditor', body);
        expect({ path, status: res.status }).toEqual({ path, status: 403 });
      }
      expect((await f.logEntries()).length).toBe(before);

      await withDashboard('admin', 'admin', async ({ page }) => {
        await shown(() => page.getByTestId('rollback-button').count()).toBe(3);
        const versions = (await (await call('GET', '/v1/versions', 'auditor')).json()) as { hash: string }[];
        // Every commit below the head, newest first.
        expect(await attrs(page, 'rollback-button', 'data-hash')).toEqual(
          versions.slice(1).map((v) => v.hash),
        );
        expect(await page.getByRole('button', { name: 'Start run' }).isVisible()).toBe(true);
      });
    });

    it("an operator's controls start a run, stop it and abort its open round, each logged", async () => {
      const before = (await f.logEntries()).length;
      await withDashboard('operator', 'controls', async ({ page }) => {
        await page.getByRole('spinbutton', { name: 'Rounds to run' }).fill('2');
        await page.getByRole('textbox', { name: 'Run label' }).fill('from the dashboard');
        await page.getByRole('button', { name: 'Start run' }).click();
        // The sites only heartbeat: round 5 opens and waits, and the page offers to stop and abort.
        const abort = page.getByRole('button', { name: 'Abort open round' });
        await abort.waitFor({ timeout: SHOWN_MS });
        expect(await page.getByTestId('status-round').textContent()).toBe('5');
        await page.getByRole('button', { name: 'Stop run' }).click();
        await shown(() => page.getByTestId('status-run').textContent()).toMatch(/^run-3 stopping/);
        await page.getByRole('textbox', { name: 'Abort reason' }).fill('operator drill');
        await abort.click();
        const row = page.locator('[data-testid="round-row"][data-round="5"]');
        await shown(() => row.getAttribute('data-status')).toBe('abort');
        expect(await row.getByTestId('round-reason').textContent()).toBe(
          'aborted by ops (admin API): operator drill',
        );
        await shown(() => page.getByTestId('status-run').textContent()).toBe('none');
        expect(await abort.isVisible()).toBe(false);
      });
      expect(coordinator.runs()[2]).toMatchObject({
        id: 'run-3',
        state: 'stopped',
        label: 'from the dashboard',
      });
      const actions = (await f.logEntries())
        .slice(before)
        .flatMap((e) =>
          e.record.adminAction ? [`${e.record.adminAction.action} ${e.record.adminAction.caller}`] : [],
        );
      expect(actions).toEqual(['runs.start ops', 'runs.stop ops', 'rounds.abort ops']);
    });
  },
);
