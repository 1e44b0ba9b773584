import { AppError } from '../../errors/app-error.js';
import { assertValidName } from '../../connectors/facets/repository.js';

// The name rule itself is the repository facet's, since connectors apply it too.
export { assertValidName };

/**
 * The name an import takes from its URL when no `name` is given: the last
 * non-empty path segment, percent-decoded (`import` when the path has none).
 * Throws 400 INVALID_NAME when that segment is not a valid name (or not valid
 * percent-encoding): such a name is refused at launch, never rewritten, so a
 * caller always gets the name they asked for or a reason; pass `name` instead.
 */
export function nameFromUrl(url: URL): string {
  const segment = url.pathname.split('/').filter(Boolean).pop();
  if (segment === undefined) return 'import';
  let name: string;
  try {
    name = decodeURIComponent(segment);
  } catch {
    throw new AppError('INVALID_NAME', 'the name taken from the URL is not valid percent-encoding; pass parameters.name', { name: segment.slice(0, 80) });
  }
  assertValidName(name, 'the name taken from the URL (pass parameters.name to choose another)');
  return name;
}
