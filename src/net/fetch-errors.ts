/**
 * Plain descriptions of why fetching a URL failed. Socket, resolver and TLS
 * error strings name internals (addresses, library names, certificate
 * details) and change between versions: the caller gets one of these fixed
 * sentences, the raw error goes to the log.
 */

const codesOf = (err: unknown): string[] => {
  const codes: string[] = [];
  for (let e: unknown = err; e && codes.length < 10; e = (e as { cause?: unknown }).cause) {
    const c = (e as { code?: unknown }).code;
    if (typeof c === 'string') codes.push(c);
    const name = (e as { name?: unknown }).name;
    if (name === 'TimeoutError' || name === 'AbortError') codes.push(name);
  }
  return codes;
};

const TLS = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|HOSTNAME_MISMATCH|ERR_OSSL)/;

/** One fixed sentence for a failed fetch (connection or transfer). */
export function describeFetchError(err: unknown): string {
  const codes = codesOf(err);
  const has = (...list: string[]) => codes.some((c) => list.includes(c));
  if (has('ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME', 'EAI_FAIL', 'EAI_NODATA')) return 'the host name could not be resolved';
  if (has('TimeoutError', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT')) return 'the source did not answer in time';
  if (codes.some((c) => TLS.test(c))) return 'the secure connection (TLS) could not be established';
  if (has('ECONNREFUSED')) return 'the connection was refused';
  if (has('EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL')) return 'the host is unreachable';
  if (has('UND_ERR_RES_CONTENT_LENGTH_MISMATCH')) return 'the source sent less or more than it announced';
  if (has('ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_ABORTED', 'ECONNABORTED', 'ERR_STREAM_PREMATURE_CLOSE')) return 'the connection broke off';
  if (has('HPE_INVALID_CONSTANT', 'HPE_INVALID_HEADER_TOKEN', 'UND_ERR_HEADERS_OVERFLOW') || codes.some((c) => c.startsWith('HPE_'))) return 'the source did not answer with valid HTTP';
  return 'the connection failed';
}
