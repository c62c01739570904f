import type pg from 'pg';

/** A pool or a client inside a transaction: repositories take either. */
export type Queryable = Pick<pg.Pool, 'query'> | Pick<pg.PoolClient, 'query'>;
