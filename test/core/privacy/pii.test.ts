import { describe, expect, it } from 'vitest';
import { parseCustomPiiPatterns } from '../../../services/config/pii-patterns.js';
import { createPiiMasker } from '../../../services/core/privacy/pii.js';

const mask = createPiiMasker({ mode: 'mask', custom: parseCustomPiiPatterns('{"employee_id": "EMP-\\\\d{6}"}') });

describe('PII masking', () => {
  it.each([
    ['mail me at Jane.Doe+crm@example.co.uk please', 'mail me at [email] please'],
    ['call +44 20 7946 0958 today', 'call [phone] today'],
    ['call +1 (555) 123-4567', 'call [phone]'],
    ['or +14155552671', 'or [phone]'],
    ['US office (555) 123-4567', 'US office [phone]'],
    ['US office 555-123-4567.', 'US office [phone].'],
    ['London 020 7946 0958', 'London [phone]'],
    ['Paris 06 12 34 56 78', 'Paris [phone]'],
    ['Berlin 030-12345678', 'Berlin [phone]'],
    ['card 4111 1111 1111 1111 expired', 'card [card] expired'],
    ['card 4111-1111-1111-1111', 'card [card]'],
    ['card 4012888888881881', 'card [card]'],
    ['amex 3782 822463 10005', 'amex [card]'],
    ['iban DE89 3704 0044 0532 0130 00 EUR', 'iban [iban] EUR'],
    ['iban GB82WEST12345698765432', 'iban [iban]'],
    ['from 192.168.1.20 and 10.0.0.1', 'from [ip] and [ip]'],
    ['v6 2001:db8::8a2e:370:7334 and ::1', 'v6 [ip] and [ip]'],
    ['employee EMP-123456 left', 'employee [employee_id] left'],
  ])('masks %j', (input, expected) => {
    expect(mask.text(input)).toBe(expected);
  });

  it.each([
    'order 12345678 shipped',
    'order #100234567 and invoice INV-2024-000123',
    'sales on 2024-01-15 and 15/01/2024 and 01.02.2024',
    'at 2024-01-15T10:30:45Z and 2024-01-15T10:30:45.123+02:00',
    'release 1.2.3, v2.10.0.1 and version 10.4.0',
    'between 12:30 and 13:45:10',
    'total 1,234,567.89 and 12 345 678 units',
    'years 2023-2024, regions 1-10',
    'card-like 4111 1111 1111 1112 fails Luhn',
    'iban-like DE89 3704 0044 0532 0130 01 fails mod 97',
    'ip-like 999.1.1.1 and 1.2.3',
    'customer_id = 123456789',
    'EMP-12345 has five digits',
  ])('leaves %j as written', (input) => {
    expect(mask.text(input)).toBe(input);
  });

  it('when hashing, then equal values share a token and different values do not', () => {
    const hash = createPiiMasker({ mode: 'hash', secret: 'x'.repeat(32) });
    const a = hash.text('Jane@Example.com');
    expect(a).toMatch(/^\[email:[0-9a-f]{12}\]$/);
    expect(hash.text('jane@example.com')).toBe(a);
    expect(hash.text('john@example.com')).not.toBe(a);
    expect(createPiiMasker({ mode: 'hash', secret: 'y'.repeat(32) }).text('jane@example.com')).not.toBe(a);
  });

  it('when masking JSON, then every string is masked and keys and other values are kept', () => {
    expect(mask.json({ 'a@b.co': 'x@y.org', n: 5, list: ['+33 6 12 34 56 78', null] })).toEqual({
      'a@b.co': '[email]',
      n: 5,
      list: ['[phone]', null],
    });
  });

  it('when masking SQL, then only string literals are masked', () => {
    expect(mask.sql("SELECT email FROM customers WHERE email = 'jane@example.com' AND note <> 'it''s 10.0.0.1'")).toBe(
      "SELECT email FROM customers WHERE email = '[email]' AND note <> 'it''s [ip]'",
    );
  });

  it('when off, then nothing changes', () => {
    const off = createPiiMasker({ mode: 'off' });
    expect(off.text('jane@example.com')).toBe('jane@example.com');
  });

  it.each([
    ['not json', /JSON object/],
    ['["a"]', /JSON object/],
    ['{"Bad Name": "x"}', /names are lowercase/],
    ['{"a": "("}', /"a"/],
    ['{"a": "x*"}', /empty string/],
  ])('when MEMORY_PII_PATTERNS is %j, then it is refused', (json, message) => {
    expect(() => parseCustomPiiPatterns(json)).toThrow(message);
  });
});
