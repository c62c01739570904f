import { IsolationViolation } from './client.js';
import { adminJobs, adminRequest, adminSubject, peekRequest, selfService } from './gdpr-ops.js';
import { keyImpersonates } from './key-ops.js';
import { context, search, sqlByKeyword, sqlByRef } from './memory-ops.js';
import type { Op } from './operations.js';
import { type RunContext, victimOf } from './run.js';
import { checkSession, clearSession, deleteSession, getSession, listAllSessions, renameSession } from './session-ops.js';
import { buildTurnWrite, retryLastKeyed, sendTurnWrite } from './turn-writes.js';
import type { Principal } from './world.js';

/**
 * Runs a program with real concurrency: every principal is a lane whose operations run in program
 * order, one at a time (so its model stays exact), while all lanes run side by side. An admin
 * request also holds its subject's lane, and an operation aimed at another user's session that
 * user's lane. The first violation stops the run and is thrown with the operation that met it;
 * then, if all went well, every principal's whole state is audited.
 */
export async function runProgram(run: RunContext, ops: readonly Op[]): Promise<void> {
  const tails = new Map<number, Promise<void>>();
  let failure: Error | undefined;
  const finished = ops.map((op, index) => {
    const lanes = lanesOf(run, op);
    const mine = Promise.all(lanes.map((lane) => tails.get(lane))).then(async () => {
      if (failure) return;
      try {
        await execute(run, op);
        run.client.figures.operations += 1;
      } catch (err) {
        const message = `operation #${index} ${JSON.stringify(op)}: ${(err as Error).message}`;
        failure ??= err instanceof IsolationViolation ? new IsolationViolation(message) : new Error(message, { cause: err });
      }
    });
    for (const lane of lanes) tails.set(lane, mine);
    return mine;
  });
  await Promise.all(finished);
  if (failure) throw failure;
  await Promise.all(run.principals.map((p) => audit(run, p.index)));
}

/** The caller's lane, and the lane of the principal an admin request or a foreign target aims at. */
function lanesOf(run: RunContext, op: Op): number[] {
  const caller = run.principals[op.who]!;
  let other: Principal | undefined;
  if (op.kind === 'adminExport' || op.kind === 'adminErase') other = adminSubject(run, caller, op.subject);
  else if ('target' in op && op.target) other = victimOf(run, caller, op.target);
  return other && other !== caller ? [op.who, other.index] : [op.who];
}

async function execute(run: RunContext, op: Op): Promise<void> {
  const caller = run.principals[op.who]!;
  switch (op.kind) {
    case 'newTurn':
    case 'addTurn':
    case 'chat':
      return sendTurnWrite(run, caller, buildTurnWrite(run, caller, op));
    case 'retryKeyed':
      return retryLastKeyed(run, caller);
    case 'listSessions':
      return listAllSessions(run, caller, op.limit);
    case 'getSession':
      return getSession(run, caller, op.target);
    case 'rename':
      return renameSession(run, caller, op.target);
    case 'deleteSession':
      return deleteSession(run, caller, op.target, op.mcp);
    case 'clearSession':
      return clearSession(run, caller, op.target);
    case 'search':
      return search(run, caller, op.target, op.k, op.mcp);
    case 'context':
      // The MCP tool gives the text format only.
      return context(run, caller, op.target, op.k, op.format, op.mcp && op.format === 'text');
    case 'sqlRef':
      return sqlByRef(run, caller, op.target, op.ref, false, op.mcp);
    case 'resultCsv':
      return sqlByRef(run, caller, op.target, op.ref, true);
    case 'sqlKeyword':
      return sqlByKeyword(run, caller, op.target, op.word);
    case 'export':
    case 'erase':
      return selfService(run, caller, op.kind);
    case 'adminExport':
      return adminRequest(run, caller, op.subject, 'export');
    case 'adminErase':
      return adminRequest(run, caller, op.subject, 'erase');
    case 'peekRequest':
      return peekRequest(run, caller, op.pick);
    case 'adminJobs':
      return adminJobs(run, caller);
    case 'keyImpersonates':
      return keyImpersonates(run, caller, op.victim, op.form);
  }
}

/**
 * The end state, per principal, once every operation has finished (so whatever any other lane
 * stored is surely there): every live session read in full, search with its count, related memories.
 */
async function audit(run: RunContext, index: number): Promise<void> {
  const caller = run.principals[index]!;
  const model = run.models[index]!;
  try {
    await listAllSessions(run, caller, 100);
    for (const session of model.live()) await checkSession(run, caller, session.id, session);
    await search(run, caller, null, 50);
    await context(run, caller, null, 20, 'text');
  } catch (err) {
    throw new IsolationViolation(`audit of P${index} after the run: ${(err as Error).message}`, { cause: err });
  }
}
