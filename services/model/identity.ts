/** Who is calling, taken only from a verified JWT. */
export interface Identity {
  tenantId: string;
  userId: string;
  roles: string[];
  /** The databases the token allows, when the token carries such a claim. */
  databases?: string[];
}

/** Which turns a request may draw on: those whose databases lie within these bounds. */
export interface DatabaseScope {
  /** The request's `vdp_database_names`, when it names any. */
  requested?: string[];
  /** The JWT's databases claim, when configured and present. */
  allowed?: string[];
}
