/**
 * Counts requests per second over the last minute in a ring of 60 one-second slots: O(1) per
 * request, no timers, no allocation. The live panel shows the average of the last 10 and 60 s.
 */
export class RequestCounter {
  private readonly slots = new Array<number>(60).fill(0);
  private readonly seconds = new Array<number>(60).fill(-1);

  constructor(private readonly now: () => number = Date.now) {}

  /** Counts one request. */
  tick(): void {
    const second = Math.floor(this.now() / 1000);
    const i = second % 60;
    if (this.seconds[i] !== second) {
      this.seconds[i] = second;
      this.slots[i] = 0;
    }
    this.slots[i]! += 1;
  }

  /** Average requests per second over the last `windowS` complete seconds (at most 60). */
  perSecond(windowS: number): number {
    const current = Math.floor(this.now() / 1000);
    let total = 0;
    for (let i = 0; i < 60; i++) {
      const age = current - this.seconds[i]!;
      if (age >= 1 && age <= windowS) total += this.slots[i]!;
    }
    return Math.round((total / windowS) * 100) / 100;
  }
}
