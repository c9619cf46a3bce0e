import { describe, expect, it } from 'vitest';
import {
  ANY_INBOX,
  federationReplyPolicy,
  federationSubjects,
  replyAllowed,
} from '../../src/transport/index.ts';

describe('reply policy', () => {
  const s = federationSubjects('fed');
  const policy = federationReplyPolicy(s, 'coord');
  const inbox = (member: string) => `_INBOX.fed.${member}.base123.token456`;

  it('answers each request only in the inbox of the member its subject names', () => {
    const cases: [string, string][] = [
      [s.heartbeat('site-1'), 'site-1'],
      [s.vote('site-1'), 'site-1'],
      [s.switched('site-1'), 'site-1'],
      [s.snapshot('site-1'), 'site-1'],
      [s.update('agg-1', 'site-1'), 'site-1'],
      [s.partial('agg-1'), 'agg-1'],
      [s.subpartial('agg-1', 'agg-2'), 'agg-2'],
      [s.heartbeat('agg-2'), 'agg-2'],
      [s.rollbackRequest, 'coord'],
      [s.registryRequest, 'coord'],
    ];
    for (const [subject, sender] of cases) {
      expect(replyAllowed(policy, subject, inbox(sender)), subject).toBe(true);
      for (const other of ['site-2', 'agg-1x', 'coord', 'site-1'].filter((m) => m !== sender)) {
        expect(replyAllowed(policy, subject, inbox(other)), `${subject} → ${other}`).toBe(false);
      }
    }
  });

  it('refuses API, service and malformed reply subjects', () => {
    const subject = s.heartbeat('site-1');
    for (const reply of [
      '$JS.API.STREAM.DELETE.COHORT_FED',
      s.log,
      s.decision,
      '_INBOX.fed.site-1',
      '_INBOX.fed.site-1.',
      '_INBOX.fed.site-1.>',
      '_INBOX.fed.site-1.*',
      '_INBOX.fed.site-1.a b',
      '_INBOX.fed.site-10.x',
      `_INBOX.fed.site-1.${'x'.repeat(1100)}`,
    ]) {
      expect(replyAllowed(policy, subject, reply), reply).toBe(false);
    }
  });

  it('answers nothing on a subject no member sends requests on', () => {
    for (const subject of [s.roundOpen, s.prepare, s.decision, s.log, 'cohort.other.heartbeat.site-1', 'x']) {
      expect(policy(subject), subject).toBeUndefined();
    }
    // A subject of the right kind with extra tokens names no single sender.
    expect(policy(`${s.heartbeat('site-1')}.extra`)).toBeUndefined();
    expect(policy('cohort.fed.update.agg-1')).toBeUndefined();
  });

  it('the default policy answers any inbox and nothing else', () => {
    expect(replyAllowed(ANY_INBOX, 'any.subject', '_INBOX.abc.def')).toBe(true);
    expect(replyAllowed(ANY_INBOX, 'any.subject', '$JS.API.STREAM.DELETE.X')).toBe(false);
    expect(replyAllowed(ANY_INBOX, 'any.subject', 'cohort.fed.log')).toBe(false);
  });
});
