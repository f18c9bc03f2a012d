/**
 * A base port whose `count` consecutive ports nobody listens on, for tests that start servers on
 * base, base + 1, … (the verl driver's teammate servers). Bases are drawn below the kernel's
 * ephemeral range, so an outgoing connection elsewhere on the machine cannot take one of them
 * between this check and the servers' start.
 */
import { createServer } from 'node:net';
import { readFileSync } from 'node:fs';

const canListen = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });

/** The first port of the kernel's ephemeral range (32768 where it cannot be read). */
function ephemeralStart(): number {
  try {
    const first = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(first) && first > 2048 ? first : 32768;
  } catch {
    return 32768;
  }
}

export async function freePorts(count: number, tries = 50): Promise<number> {
  const lo = 20000;
  const hi = Math.max(lo + count + 1, ephemeralStart() - count);
  for (let t = 0; t < tries; t++) {
    const base = lo + Math.floor(Math.random() * (hi - lo));
    let free = true;
    for (let i = 0; i < count && free; i++) free = await canListen(base + i);
    if (free) return base;
  }
  throw new Error(`no ${count} consecutive free ports found in ${lo}–${hi} after ${tries} tries`);
}
