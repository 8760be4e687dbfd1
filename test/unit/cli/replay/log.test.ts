import { describe, expect, it } from 'vitest';
import { parseLog, toLogEntries } from '../../../../cli/replay/log';

describe('parseLog', () => {
  it('reads string and object bodies, attributes and FIFO ids, numbering lines from 1', () => {
    const text = [
      '{"body": "plain text"}',
      '{"body": {"orderId": "o-1", "total": 12.5}, "attributes": {"dedupKey": "o-1#PAID", "version": 3}}',
      '{"body": "x", "groupId": "customer-7", "deduplicationId": "o-2#PAID"}',
    ].join('\n');

    expect(parseLog(text)).toEqual([
      { line: 1, body: 'plain text', attributes: {} },
      { line: 2, body: '{"orderId":"o-1","total":12.5}', attributes: { dedupKey: 'o-1#PAID', version: 3 } },
      { line: 3, body: 'x', attributes: {}, groupId: 'customer-7', deduplicationId: 'o-2#PAID' },
    ]);
  });

  it('skips blank lines but keeps counting them, with CRLF endings and a byte order mark', () => {
    const text = '\uFEFF{"body": "a"}\r\n\r\n   \r\n{"body": "b"}\r\n';

    expect(parseLog(text)).toEqual([
      { line: 1, body: 'a', attributes: {} },
      { line: 4, body: 'b', attributes: {} },
    ]);
  });

  it('names every bad line with its problem, without echoing the line content', () => {
    const text = [
      '{"body": "ok"}',
      '{"body": "secret", }',
      '["body"]',
      '{"body": 42}',
      '{"body": ""}',
      '{"bdy": "x"}',
      '{"body": "x", "attributes": {"AWS.trace": "1"}}',
      '{"body": "x", "attributes": {"n": true}}',
      '{"body": "x", "groupId": ""}',
      '{"body": "x", "deduplicationId": 7}',
    ].join('\n');

    expect(() => parseLog(text)).toThrow(
      [
        'The message log is invalid:',
        '  line 2: not valid JSON',
        '  line 3: Expected a JSON object, got an array',
        '  line 4: Expected `body` to be a non-empty string or an object, got a number',
        '  line 5: Expected `body` to be a non-empty string or an object, got an empty string',
        '  line 6: Unknown field `bdy` (expected body, attributes, groupId, deduplicationId)',
        '  line 7: Invalid attribute name `AWS.trace` (letters, digits, _ - . only; no AWS. or Amazon. prefix)',
        '  line 8: Expected attribute `n` to be a non-empty string or a finite number, got a boolean',
        '  line 9: Expected `groupId` to be a string of 1 to 128 characters, got an empty string',
        '  line 10: Expected `deduplicationId` to be a string of 1 to 128 characters, got a number',
      ].join('\n'),
    );
  });

  it('lists ten problems and counts the rest', () => {
    const text = Array.from({ length: 12 }, () => '{}').join('\n');

    const error = captureError(() => parseLog(text));

    expect(error).toMatchObject({ name: 'ReplayError', code: 'INVALID_LOG' });
    expect((error as Error).message.split('\n').slice(-2)).toEqual([
      '  line 10: Missing `body`',
      '  ... and 2 more',
    ]);
  });

  it('rejects more than ten attributes on a message', () => {
    const attributes = Object.fromEntries(Array.from({ length: 11 }, (_, index) => [`a${index}`, index]));

    expect(() => parseLog(JSON.stringify({ body: 'x', attributes }))).toThrow(
      'The message log is invalid:\n  line 1: Expected at most 10 attributes, got 11',
    );
  });

  it('rejects a log without messages as INVALID_LOG', () => {
    expect(captureError(() => parseLog('\n\n'))).toMatchObject({
      code: 'INVALID_LOG',
      message: 'The message log has no messages.',
    });
  });
});

describe('toLogEntries', () => {
  it('validates message objects like log lines, numbering them by position', () => {
    expect(toLogEntries([{ body: { id: 1 } }, { body: 'b', attributes: { k: 'v' } }])).toEqual([
      { line: 1, body: '{"id":1}', attributes: {} },
      { line: 2, body: 'b', attributes: { k: 'v' } },
    ]);
    expect(() => toLogEntries([{ body: 'ok' }, { body: null as unknown as string }])).toThrow(
      'The message log is invalid:\n  line 2: Expected `body` to be a non-empty string or an object, got null',
    );
  });
});

function captureError(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error');
}
