import { createHash } from 'node:crypto';
import type { Queryable } from '../repositories/queryable.js';

/** The schema the demo dataset lives in, apart from the memory tables. */
export const DEMO_SCHEMA = 'demo';
/** Reads the demo schema and nothing else: the role the sql answerer's statements take on the embedded database. */
export const DEMO_READER_ROLE = 'memorychat_sql_reader';
/** Marks the schema as this dataset, in this version: a start finds it loaded and leaves it. */
const DEMO_VERSION = 'memorychat demo dataset v1';

/**
 * A small sales dataset (regions, products, customers, orders and their lines, 2023-2024), generated
 * by arithmetic on the row number rather than at random, so every load holds the same rows.
 */
const DEMO_TABLES = `
CREATE SCHEMA demo;
COMMENT ON SCHEMA demo IS '${DEMO_VERSION}';
CREATE TABLE demo.regions (
  region_id integer PRIMARY KEY,
  name text NOT NULL UNIQUE
);
COMMENT ON TABLE demo.regions IS 'Sales regions';
CREATE TABLE demo.products (
  product_id integer PRIMARY KEY,
  name text NOT NULL,
  category text NOT NULL,
  unit_price numeric(10, 2) NOT NULL
);
COMMENT ON TABLE demo.products IS 'Products with their list price';
CREATE TABLE demo.customers (
  customer_id integer PRIMARY KEY,
  name text NOT NULL,
  segment text NOT NULL,
  region_id integer NOT NULL REFERENCES demo.regions
);
COMMENT ON COLUMN demo.customers.segment IS 'Enterprise, SMB or Consumer';
CREATE TABLE demo.orders (
  order_id integer PRIMARY KEY,
  customer_id integer NOT NULL REFERENCES demo.customers,
  order_date date NOT NULL,
  status text NOT NULL
);
COMMENT ON COLUMN demo.orders.status IS 'completed or cancelled; cancelled orders are not sales';
CREATE TABLE demo.order_lines (
  order_id integer NOT NULL REFERENCES demo.orders,
  line_number integer NOT NULL,
  product_id integer NOT NULL REFERENCES demo.products,
  quantity integer NOT NULL,
  amount numeric(12, 2) NOT NULL,
  PRIMARY KEY (order_id, line_number)
);
COMMENT ON COLUMN demo.order_lines.amount IS 'quantity times the unit price, in USD';
CREATE VIEW demo.sales AS
  SELECT o.order_id, o.order_date, r.name AS region, c.segment, p.category, p.name AS product, l.quantity, l.amount
    FROM demo.order_lines l
    JOIN demo.orders o USING (order_id)
    JOIN demo.customers c USING (customer_id)
    JOIN demo.regions r USING (region_id)
    JOIN demo.products p USING (product_id)
   WHERE o.status = 'completed';
COMMENT ON VIEW demo.sales IS 'One row per completed order line, with its region, segment and product';

INSERT INTO demo.regions VALUES (1, 'North America'), (2, 'Europe'), (3, 'Asia Pacific'), (4, 'Latin America');
INSERT INTO demo.products VALUES
  (1, 'Laptop Pro 14', 'Computers', 1899.00), (2, 'Laptop Air 13', 'Computers', 1199.00),
  (3, 'Desktop Tower', 'Computers', 1499.00), (4, 'Monitor 27', 'Displays', 349.00),
  (5, 'Monitor 32 4K', 'Displays', 599.00), (6, 'Docking Station', 'Accessories', 229.00),
  (7, 'Wireless Keyboard', 'Accessories', 89.00), (8, 'Wireless Mouse', 'Accessories', 49.00),
  (9, 'Noise-cancelling Headset', 'Accessories', 199.00), (10, 'Tablet 11', 'Mobile', 649.00),
  (11, 'Phone X', 'Mobile', 999.00), (12, 'Phone Lite', 'Mobile', 499.00);
INSERT INTO demo.customers
  SELECT g, 'Customer ' || lpad(g::text, 3, '0'), (ARRAY['Enterprise', 'SMB', 'Consumer'])[1 + g % 3], 1 + (g * 7) % 4
    FROM generate_series(1, 80) AS g;
INSERT INTO demo.orders
  SELECT g, 1 + (g * 37) % 80, date '2023-01-01' + (g * 211) % 731, CASE WHEN g % 23 = 0 THEN 'cancelled' ELSE 'completed' END
    FROM generate_series(1, 1200) AS g;
INSERT INTO demo.order_lines
  SELECT o.order_id, l, p.product_id, q.quantity, q.quantity * p.unit_price
    FROM demo.orders AS o
    CROSS JOIN LATERAL generate_series(1, 1 + o.order_id % 3) AS l
    JOIN demo.products AS p ON p.product_id = 1 + (o.order_id * 5 + l * 7) % 12
    CROSS JOIN LATERAL (SELECT 1 + (o.order_id + l * 3) % 5 AS quantity) AS q;
ANALYZE demo.regions, demo.products, demo.customers, demo.orders, demo.order_lines;
`;

/**
 * The reader role, and what the sql answerer's statements may not do in the demo's engine
 * (db/demo/demo-engine.ts). Its login is PGlite's superuser, which may take any role, so a query could
 * switch back to it from inside itself (set_config('role', …) before a query_to_xml) and write to
 * the demo tables or turn the transaction read-write: set_config is withdrawn from PUBLIC. pg_sleep
 * is withdrawn too: it would only wait for the question's time bound to restart the engine.
 */
const DEMO_GRANTS = `
CREATE ROLE ${DEMO_READER_ROLE} NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE NOINHERIT;
REVOKE ALL ON SCHEMA demo FROM PUBLIC;
GRANT USAGE ON SCHEMA demo TO ${DEMO_READER_ROLE};
GRANT SELECT ON ALL TABLES IN SCHEMA demo TO ${DEMO_READER_ROLE};
REVOKE EXECUTE ON FUNCTION pg_catalog.set_config(text, text, boolean) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION pg_catalog.pg_sleep(double precision), pg_catalog.pg_sleep_for(interval),
  pg_catalog.pg_sleep_until(timestamp with time zone) FROM PUBLIC;
`;

/** Names what a fresh engine is loaded with: an engine dumped after another content is not started from. */
export const DEMO_CONTENT_HASH = createHash('sha256').update(DEMO_TABLES).update(DEMO_GRANTS).digest('hex').slice(0, 16);

/** Creates the demo tables in `demo` and fills them, unless this version is there already; a server test loads them this way too. */
export async function loadDemoTables(db: Queryable): Promise<void> {
  const found = await db.query<{ version: string | null }>(
    "SELECT obj_description(oid, 'pg_namespace') AS version FROM pg_namespace WHERE nspname = $1",
    [DEMO_SCHEMA],
  );
  if (found.rows[0]?.version === DEMO_VERSION) return;
  if (found.rows.length) {
    if (!found.rows[0]!.version?.startsWith('memorychat demo dataset')) {
      throw new Error(`schema ${DEMO_SCHEMA} exists and is not memorychat's demo dataset; SQL_DATABASE_URL=embedded-demo needs it`);
    }
    await db.query(`DROP SCHEMA ${DEMO_SCHEMA} CASCADE`);
  }
  await db.query(DEMO_TABLES);
}

/** A fresh demo engine's contents: the dataset and the reader role with its grants, in one transaction. */
export async function loadDemoEngine(db: Queryable): Promise<void> {
  await db.query('BEGIN');
  try {
    await loadDemoTables(db);
    await db.query(DEMO_GRANTS);
    await db.query('COMMIT');
  } catch (err) {
    await db.query('ROLLBACK').catch(() => {});
    throw err;
  }
}
