/**
 * A start that cannot go on for a reason the operator fixes (a busy port, a
 * database another process holds, a Redis prefix of another deployment): the
 * entrypoint prints its message as one line on stderr, without a stack, and
 * exits non-zero. The message says what to change.
 */
export class StartError extends Error {
  override readonly name: string = 'StartError';
}
