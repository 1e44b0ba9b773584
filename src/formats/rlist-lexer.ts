import { invalidRlist } from './format-errors.js';

/**
 * Splits RList text into section headers and `KEY=value` entries as chunks
 * arrive, holding at most one entry (bounded by `maxChars`). Rules
 * (docs/formats.md): CRLF or LF; blank lines and lines starting with `;` are
 * skipped; a key or value may be quoted with `"`, where `\"` is a quote, `\\`
 * a backslash, any other backslash is itself, and line breaks are part of the
 * value; an unquoted value runs to the end of the line, trimmed.
 */

export type RlistToken =
  | { type: 'section'; name: string; line: number }
  | { type: 'entry'; key: string; quotedKey: boolean; value: string; line: number };

type State =
  | 'lineStart' | 'comment' | 'section' | 'afterSection'
  | 'keyBare' | 'keyQuoted' | 'keyQuotedEscape' | 'afterKey'
  | 'valueStart' | 'valueBare' | 'valueQuoted' | 'valueQuotedEscape' | 'afterValue';

const isBlank = (c: string) => c === ' ' || c === '\t' || c === '\r';

export class RlistLexer {
  private state: State = 'lineStart';
  private line = 1;
  private entryLine = 1;
  private section: string | null = null;
  private buf = '';
  private key = '';
  private quotedKey = false;

  constructor(private readonly maxChars: number) {}

  /** Feeds text; returns the tokens it completed. Throws a 400 naming section, key and line. */
  push(text: string): RlistToken[] {
    const out: RlistToken[] = [];
    for (let i = 0; i < text.length; i++) {
      const c = text[i]!;
      if (c === '\n') this.line++;
      switch (this.state) {
        case 'lineStart':
          if (isBlank(c) || c === '\n') break;
          this.entryLine = this.line;
          this.buf = '';
          this.key = '';
          if (c === ';') this.state = 'comment';
          else if (c === '[') this.state = 'section';
          else if (c === '"') this.state = 'keyQuoted';
          else if (c === '=') throw this.fail('a line starts with "=": the key is missing', '');
          else {
            this.state = 'keyBare';
            this.buf = c;
          }
          break;
        case 'comment': {
          if (c === '\n') {
            this.state = 'lineStart';
            break;
          }
          // skip to just before the line break, which the next turn counts
          const end = text.indexOf('\n', i + 1);
          i = (end < 0 ? text.length : end) - 1;
          break;
        }
        case 'section':
          if (c === ']') {
            this.section = this.buf.trim();
            out.push({ type: 'section', name: this.section, line: this.entryLine });
            this.state = 'afterSection';
          } else if (c === '\n') {
            throw this.fail(`section header "[${this.buf.trim()}" has no closing "]"`, undefined, this.buf.trim(), this.entryLine);
          } else this.append(c);
          break;
        case 'afterSection':
          if (c === '\n') this.state = 'lineStart';
          else if (c === ';') this.state = 'comment';
          else if (!isBlank(c)) throw this.fail(`text after the section header "[${this.section}]"`);
          break;
        case 'keyBare':
          if (c === '=') this.startValue(this.buf.trim(), false);
          else if (c === '\n') throw this.fail('a line is not KEY=value', this.buf.trim(), undefined, this.entryLine);
          else if (c === '"') throw this.fail('a quote inside an unquoted key', this.buf.trim());
          else this.append(c);
          break;
        case 'keyQuoted':
          if (c === '\\') this.state = 'keyQuotedEscape';
          else if (c === '"') {
            this.key = this.buf;
            this.state = 'afterKey';
          } else this.append(c);
          break;
        case 'keyQuotedEscape':
          this.append(c === '"' || c === '\\' ? c : `\\${c}`);
          this.state = 'keyQuoted';
          break;
        case 'afterKey':
          if (c === '=') this.startValue(this.key, true);
          else if (!isBlank(c)) throw this.fail('a quoted key is not followed by "="', this.key, undefined, this.entryLine);
          break;
        case 'valueStart':
          if (c === '"') this.state = 'valueQuoted';
          else if (c === '\n') out.push(this.entry(''));
          else if (!isBlank(c)) {
            this.state = 'valueBare';
            this.append(c);
          }
          break;
        case 'valueBare':
          if (c === '\n') out.push(this.entry(this.buf.trim()));
          else this.append(c);
          break;
        case 'valueQuoted':
          if (c === '\\') this.state = 'valueQuotedEscape';
          else if (c === '"') {
            out.push(this.entry(this.buf));
            this.state = 'afterValue';
          } else this.append(c);
          break;
        case 'valueQuotedEscape':
          this.append(c === '"' || c === '\\' ? c : `\\${c}`);
          this.state = 'valueQuoted';
          break;
        case 'afterValue':
          if (c === '\n') this.state = 'lineStart';
          else if (c === ';') this.state = 'comment';
          else if (!isBlank(c)) throw this.fail('text after the closing quote of a value', this.key);
          break;
      }
    }
    return out;
  }

  /** Ends the input: completes a last unterminated line or fails on an open quote or header. */
  end(): RlistToken[] {
    switch (this.state) {
      case 'section':
        throw this.fail(`section header "[${this.buf.trim()}" has no closing "]"`, undefined, this.buf.trim(), this.entryLine);
      case 'keyBare':
        throw this.fail('a line is not KEY=value', this.buf.trim(), undefined, this.entryLine);
      case 'keyQuoted':
      case 'keyQuotedEscape':
      case 'afterKey':
        throw this.fail('a quoted key is not closed or has no "="', this.buf, undefined, this.entryLine);
      case 'valueQuoted':
      case 'valueQuotedEscape':
        throw this.fail('a quoted value is not closed before the end of the input', this.key, undefined, this.entryLine);
      case 'valueStart':
        return [this.entry('')];
      case 'valueBare':
        return [this.entry(this.buf.trim())];
      default:
        return [];
    }
  }

  private startValue(key: string, quoted: boolean): void {
    if (key === '' && !quoted) throw this.fail('a line starts with "=": the key is missing', '');
    this.key = key;
    this.quotedKey = quoted;
    this.buf = '';
    this.state = 'valueStart';
  }

  private entry(value: string): RlistToken {
    this.state = 'lineStart';
    return { type: 'entry', key: this.key, quotedKey: this.quotedKey, value, line: this.entryLine };
  }

  private append(c: string): void {
    if (this.buf.length + this.key.length >= this.maxChars) {
      throw this.fail(`an entry is longer than the limit of ${this.maxChars} characters`, this.state.startsWith('value') ? this.key : undefined);
    }
    this.buf += c;
  }

  private fail(message: string, key?: string, section: string | null = this.section, line = this.line) {
    const where = section === null ? 'before any section' : `in section [${section}]`;
    return invalidRlist(`line ${line}, ${where}${key !== undefined ? `, key "${key}"` : ''}: ${message}`, {
      section,
      ...(key !== undefined ? { key } : {}),
      line,
    });
  }
}
