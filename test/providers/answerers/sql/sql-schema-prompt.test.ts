import { countTokens } from 'gpt-tokenizer';
import { describe, expect, it } from 'vitest';
import type { SchemaTable } from '../../../../services/providers/answerers/sql/schema-introspection.js';
import { renderSchema } from '../../../../services/providers/answerers/sql/schema-prompt.js';

function table(name: string, columns = 6): SchemaTable {
  return {
    schema: 'sales',
    name,
    comment: `the ${name}`,
    columns: Array.from({ length: columns }, (_, i) => ({
      name: i ? `${name}_attribute_${i}` : `${name}_id`,
      type: 'integer',
      comment: null,
    })),
    primaryKey: [`${name}_id`],
    foreignKeys: name === 'orders' ? [{ columns: ['orders_attribute_1'], references: 'sales.customers(customers_id)' }] : [],
  };
}

const TABLES = ['customers', 'invoices', 'orders', 'products', 'regions', 'shipments', 'suppliers', 'warehouses'].map((n) => table(n));

describe('the schema the sql answerer shows the LLM', () => {
  it('when every table fits, then each is one line with its keys, references and comment', () => {
    const text = renderSchema(TABLES, { maxTokens: 4000, usedTables: [], question: 'anything' });
    expect(text.split('\n')).toHaveLength(TABLES.length);
    expect(text).toContain(
      'sales.orders(orders_id integer PK, orders_attribute_1 integer → sales.customers(customers_id), orders_attribute_2 integer,',
    );
    expect(text).toContain(') -- the orders');
  });

  it('when the budget is small, then it holds, the tables the conversation used and the question names come first, and the rest are named', () => {
    const full = countTokens(renderSchema(TABLES, { maxTokens: 100_000, usedTables: [], question: '' }));
    for (const maxTokens of [Math.floor(full / 3), Math.floor(full / 2), Math.floor((full * 3) / 4)]) {
      const text = renderSchema(TABLES, { maxTokens, usedTables: ['sales.warehouses'], question: 'How many shipments left last week?' });
      expect(countTokens(text), `budget ${maxTokens}`).toBeLessThanOrEqual(maxTokens);
      const lines = text.split('\n');
      expect(lines[0], `budget ${maxTokens}`).toMatch(/^sales\.warehouses\(/);
      expect(lines[1], `budget ${maxTokens}`).toMatch(/^sales\.shipments\(/);
      expect(lines.at(-1), `budget ${maxTokens}`).toMatch(/^-- (not shown for length: sales\.|\d+ more tables not shown)/);
    }
  });
});
