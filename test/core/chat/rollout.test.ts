import { describe, expect, it } from 'vitest';
import { memoryDecision, rolloutBucket, storesTurns } from '../../../services/core/chat/rollout.js';
import type { RolloutSettings } from '../../../services/core/deps.js';

const settings = (percent: number, tenants: [string, number][] = []): RolloutSettings => ({
  enabled: true,
  percent,
  tenantPercent: new Map(tenants),
  storeOutside: true,
});
const users = Array.from({ length: 1000 }, (_, i) => ({ tenantId: 'acme', userId: `user-${i}` }));

describe('memory rollout', () => {
  it('when the rollout is 0%, then no user gets memory; at 100%, every user does', () => {
    expect(users.filter((u) => memoryDecision(settings(0), u, true).applied)).toEqual([]);
    expect(users.every((u) => memoryDecision(settings(100), u, true).applied)).toBe(true);
    expect(memoryDecision(settings(0), users[0]!, true)).toEqual({ applied: false, reason: 'outside_rollout' });
  });

  it('when the rollout is 50%, then near half of 1,000 users get memory, each user always the same way', () => {
    const inside = users.filter((u) => memoryDecision(settings(50), u, true).applied);
    expect(inside.length).toBeGreaterThan(450);
    expect(inside.length).toBeLessThan(550);
    for (const u of users) expect(memoryDecision(settings(50), { ...u }, true)).toEqual(memoryDecision(settings(50), u, true));
  });

  it('when the percentage is raised, then everyone already inside stays inside', () => {
    const at20 = users.filter((u) => memoryDecision(settings(20), u, true).applied);
    expect(at20.every((u) => memoryDecision(settings(60), u, true).applied)).toBe(true);
  });

  it('when the same user id is in two tenants, then the buckets are independent of each other', () => {
    const differ = users.filter((u) => rolloutBucket(u) !== rolloutBucket({ ...u, tenantId: 'globex' }));
    expect(differ.length).toBeGreaterThan(900);
  });

  it('when a tenant has an override, then it replaces the percentage for that tenant only', () => {
    const s = settings(0, [['acme', 100]]);
    expect(memoryDecision(s, { tenantId: 'acme', userId: 'u' }, true).applied).toBe(true);
    expect(memoryDecision(s, { tenantId: 'globex', userId: 'u' }, true).applied).toBe(false);
  });

  it('when memory is disabled or the request declines it, then that is the reason', () => {
    expect(memoryDecision({ ...settings(100), enabled: false }, users[0]!, true)).toEqual({ applied: false, reason: 'memory_disabled' });
    expect(memoryDecision(settings(100), users[0]!, false)).toEqual({ applied: false, reason: 'use_memory_false' });
  });

  it('when storing outside the rollout is off, then only users inside it have their turns stored, whatever the request asks', () => {
    const s = { ...settings(50), storeOutside: false };
    const stored = users.filter((u) => storesTurns(s, u));
    expect(stored).toEqual(users.filter((u) => memoryDecision(s, u, true).applied));
    expect(users.every((u) => storesTurns(settings(50), u))).toBe(true);
    expect(users.some((u) => storesTurns({ ...settings(100), enabled: false, storeOutside: false }, u))).toBe(false);
  });
});
