import type { FederationSubjects } from './subjects.ts';

/**
 * Where a responder may answer: for a request received on `subject`, the inbox prefix its reply
 * subject must fall under (the requester's own), or `undefined` when no request on `subject` may
 * be answered. nats-server's `allow_responses` lets a responder publish once on whatever reply
 * subject a requester set, a JetStream API call or the log subject included (and it overrides a
 * deny list), so the responder itself must refuse a reply subject the requester does not own.
 */
export type ReplyPolicy = (subject: string) => string | undefined;

/** A transport's default policy: replies only under `_INBOX.` (never a stream, API or service subject). */
export const ANY_INBOX: ReplyPolicy = () => '_INBOX';

/** Characters a reply subject may hold: one token per `.`, no wildcard, no whitespace. */
const REPLY_RE = /^[A-Za-z0-9_$-]+(\.[A-Za-z0-9_$-]+)+$/;

/**
 * Whether a request received on `subject` may be answered on `reply`: `reply` must be a plain
 * subject (no wildcards) strictly under the prefix `policy` gives for `subject`.
 */
export function replyAllowed(policy: ReplyPolicy, subject: string, reply: string): boolean {
  const prefix = policy(subject);
  return (
    prefix !== undefined &&
    reply.length > prefix.length + 1 &&
    reply.startsWith(`${prefix}.`) &&
    reply.length <= 1024 &&
    REPLY_RE.test(reply)
  );
}

/**
 * The reply policy of a federation's members: a request is answered only in the inbox of the one
 * member whose NATS user may publish its subject, the member the subject names (see the
 * permissions: a site publishes only its own update, vote, share, epoch, heartbeat, switched and snapshot
 * subjects; an aggregator its partial, its sub-partials and its heartbeat). The operator's admin
 * requests (`admin.rollback`, `admin.registry`) come from the coordinator's user (`operator`).
 * Any other subject is answered nowhere.
 */
export function federationReplyPolicy(subjects: FederationSubjects, operator: string): ReplyPolicy {
  const base = `cohort.${subjects.federation}.`;
  const operatorInbox = subjects.inboxPrefix(operator);
  // The token naming the sender, by the kind of subject: [kind, token count after the kind, index].
  const sender: Readonly<Record<string, readonly [number, number]>> = {
    heartbeat: [1, 0],
    vote: [1, 0],
    share: [1, 0],
    epoch: [1, 0],
    switched: [1, 0],
    snapshot: [1, 0],
    partial: [1, 0],
    update: [2, 1],
    subpartial: [2, 1],
  };
  return (subject) => {
    if (subject === subjects.rollbackRequest || subject === subjects.registryRequest) return operatorInbox;
    if (!subject.startsWith(base)) return undefined;
    const [kind, ...rest] = subject.slice(base.length).split('.');
    const where = sender[kind ?? ''];
    if (where === undefined || rest.length !== where[0]) return undefined;
    const member = rest[where[1]]!;
    return /^[A-Za-z0-9_-]{1,128}$/.test(member) ? subjects.inboxPrefix(member) : undefined;
  };
}
