import type { StreamConfig, StreamInfo } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { checkStreamSettings, type ExpectedStreamSettings } from '../../../src/services/store/index.ts';

const expected: ExpectedStreamSettings = {
  name: 'COHORT_F1',
  subjects: ['cohort.f1.log', 'cohort.f1.audit'],
  storage: 'file',
  replicas: 3,
  denyDelete: true,
  denyPurge: true,
  discard: 'new',
  maxAgeMs: 0,
  retention: 'limits',
  allowRollup: false,
  maxMsgsPerSubject: -1,
};

const good: Partial<StreamConfig> = {
  name: 'COHORT_F1',
  subjects: ['cohort.f1.audit', 'cohort.f1.log'],
  storage: 'file',
  num_replicas: 3,
  deny_delete: true,
  deny_purge: true,
  discard: 'new',
  max_age: 0,
  retention: 'limits',
  max_msgs: -1,
  allow_rollup_hdrs: false,
  max_msgs_per_subject: -1,
};

const info = (over: Partial<StreamConfig> = {}) =>
  ({ config: { ...good, ...over } }) as unknown as StreamInfo;

describe('checkStreamSettings', () => {
  it('accepts a matching stream, whatever the subject order', () => {
    expect(checkStreamSettings(info(), expected)).toEqual([]);
  });

  it('names each mismatched setting with its actual and expected value', () => {
    const cases: [Partial<StreamConfig>, string][] = [
      [{ name: 'OTHER' }, 'name is OTHER, expected COHORT_F1'],
      [{ storage: 'memory' }, 'storage is memory, expected file'],
      [{ num_replicas: 1 }, 'replicas is 1, expected 3'],
      [{ deny_delete: false }, 'deny_delete is false, expected true'],
      [{ deny_purge: false }, 'deny_purge is false, expected true'],
      [{ discard: 'old' }, 'discard is old, expected new'],
      [{ max_age: 60_000_000_000 }, 'max_age is 60000 ms, expected 0 (no limit)'],
      [{ retention: 'interest' }, 'retention is interest, expected limits'],
      // A rollup message would wipe the history even with purges denied.
      [{ allow_rollup_hdrs: true }, 'allow_rollup_hdrs is true, expected false'],
      // A per-subject limit drops the oldest entries even under discard-new.
      [{ max_msgs_per_subject: 1 }, 'max_msgs_per_subject is 1, expected -1 (no limit)'],
      [
        { subjects: ['cohort.f1.log'] },
        'subjects are [cohort.f1.log], expected [cohort.f1.audit, cohort.f1.log]',
      ],
      [
        { subjects: ['cohort.f1.log', 'cohort.>'] },
        'subjects are [cohort.>, cohort.f1.log], expected [cohort.f1.audit, cohort.f1.log]',
      ],
    ];
    for (const [over, message] of cases) {
      expect(checkStreamSettings(info(over), expected)).toEqual([message]);
    }
  });

  it('treats absent deny flags as false and lists every difference at once', () => {
    const cfg = { ...good } as Record<string, unknown>;
    delete cfg['deny_delete'];
    delete cfg['deny_purge'];
    delete cfg['subjects'];
    delete cfg['allow_rollup_hdrs'];
    delete cfg['max_msgs_per_subject'];
    cfg['storage'] = 'memory';
    expect(checkStreamSettings({ config: cfg } as unknown as StreamInfo, expected)).toEqual([
      'subjects are [], expected [cohort.f1.audit, cohort.f1.log]',
      'storage is memory, expected file',
      'deny_delete is false, expected true',
      'deny_purge is false, expected true',
    ]);
    expect(checkStreamSettings(info({ discard: 'old' }), { ...expected, discard: 'old' })).toEqual([]);
    // 0 is "no limit" to the server too.
    expect(checkStreamSettings(info({ max_msgs_per_subject: 0 }), expected)).toEqual([]);
  });

  it('refuses malformed inputs naming them', () => {
    expect(() => checkStreamSettings({} as StreamInfo, expected)).toThrow(/info/);
    expect(() => checkStreamSettings(info(), { ...expected, name: '' })).toThrow(/expected\.name/);
    expect(() => checkStreamSettings(info(), { ...expected, subjects: [] })).toThrow(/expected\.subjects/);
    expect(() => checkStreamSettings(info(), { ...expected, replicas: 0 })).toThrow(/expected\.replicas/);
    expect(() => checkStreamSettings(info(), { ...expected, maxAgeMs: -5 })).toThrow(/expected\.maxAgeMs/);
    expect(() => checkStreamSettings(info(), { ...expected, allowRollup: true as false })).toThrow(
      /expected\.allowRollup/,
    );
    // A per-subject limit drops old messages unless the new one is refused instead.
    expect(() => checkStreamSettings(info(), { ...expected, maxMsgsPerSubject: 1 })).toThrow(
      /expected\.maxMsgsPerSubject/,
    );
    expect(() => checkStreamSettings(info(), { ...expected, maxMsgSize: 0 })).toThrow(/expected\.maxMsgSize/);
  });
});

describe('checkStreamSettings of a write-once stream (the contributions stream)', () => {
  const writeOnce: ExpectedStreamSettings = {
    ...expected,
    maxAgeMs: 60_000,
    maxMsgsPerSubject: 1,
    discardNewPerSubject: true,
    maxMsgSize: 4096,
  };
  const goodOnce: Partial<StreamConfig> = {
    ...good,
    max_age: 60_000 * 1_000_000,
    max_msgs_per_subject: 1,
    discard_new_per_subject: true,
    max_msg_size: 4096,
  };
  const once = (over: Partial<StreamConfig> = {}) =>
    ({ config: { ...goodOnce, ...over } }) as unknown as StreamInfo;

  it('accepts the stream with every setting as expected', () => {
    expect(checkStreamSettings(once(), writeOnce)).toEqual([]);
  });

  it('refuses each weaker setting, naming it', () => {
    const cases: [Partial<StreamConfig>, string][] = [
      // Subjects not write-once: a second message would be kept (or the first dropped).
      [{ discard_new_per_subject: false }, 'discard_new_per_subject is false, expected true'],
      [{ max_msgs_per_subject: -1 }, 'max_msgs_per_subject is -1, expected 1'],
      [{ max_msgs_per_subject: 5 }, 'max_msgs_per_subject is 5, expected 1'],
      // Messages larger than one frame, or no cap.
      [{ max_msg_size: -1 }, 'max_msg_size is -1, expected 4096'],
      [{ max_msg_size: 1 << 20 }, 'max_msg_size is 1048576, expected 4096'],
      [{ max_age: 0 }, 'max_age is 0 ms, expected 60000'],
      [{ allow_rollup_hdrs: true }, 'allow_rollup_hdrs is true, expected false'],
      [{ deny_delete: false }, 'deny_delete is false, expected true'],
      [{ deny_purge: false }, 'deny_purge is false, expected true'],
      // Messages that come from another stream pass no subject permission.
      [
        { mirror: { name: 'OTHER' } } as Partial<StreamConfig>,
        'the stream mirrors another stream, expected none',
      ],
      [
        { sources: [{ name: 'A' }, { name: 'B' }] } as Partial<StreamConfig>,
        'the stream sources 2 other stream(s), expected none',
      ],
    ];
    for (const [over, message] of cases) {
      expect(checkStreamSettings(once(over), writeOnce), message).toEqual([message]);
    }
  });
});
