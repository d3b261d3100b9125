/** A least-recently-used map bounded by a total weight (bytes, entries...). */
export class Lru<K, V> {
  private readonly map = new Map<K, { value: V; weight: number }>();
  private total = 0;

  constructor(
    private readonly maxWeight: number,
    private readonly weigh: (value: V) => number = () => 1,
  ) {}

  /** The weight of what is kept now (never above the bound). */
  get weight(): number {
    return this.total;
  }

  get(key: K): V | undefined {
    const hit = this.map.get(key);
    if (!hit) return undefined;
    this.map.delete(key);
    this.map.set(key, hit);
    return hit.value;
  }

  /** Forgets `key` (a value known to be superseded: its weight is better spent on others). */
  delete(key: K): void {
    const hit = this.map.get(key);
    if (!hit) return;
    this.total -= hit.weight;
    this.map.delete(key);
  }

  /** Forgets every entry whose key `matches` (a pass over all of them: for what is rare, a pack dropped). */
  deleteWhere(matches: (key: K) => boolean): void {
    for (const [key, hit] of this.map) {
      if (!matches(key)) continue;
      this.total -= hit.weight;
      this.map.delete(key);
    }
  }

  set(key: K, value: V): void {
    const weight = this.weigh(value);
    const old = this.map.get(key);
    if (old) {
      this.total -= old.weight;
      this.map.delete(key);
    }
    if (weight > this.maxWeight) return;
    this.map.set(key, { value, weight });
    this.total += weight;
    if (this.total <= this.maxWeight) return;
    for (const [k, v] of this.map) {
      if (this.total <= this.maxWeight) break;
      this.map.delete(k);
      this.total -= v.weight;
    }
  }
}
