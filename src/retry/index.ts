// One way to wait before trying again: exponential backoff with jitter, used by every retry loop
// (a request nobody answers yet, a log append the server did not confirm, a lease renewal).
export { type BackoffOptions, backoffDelay, sleep } from './backoff.ts';
