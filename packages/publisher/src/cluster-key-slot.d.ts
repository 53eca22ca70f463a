/** Types of `cluster-key-slot` (ioredis' own dependency), which ships none. */
declare module 'cluster-key-slot' {
  /** The Redis Cluster hash slot of `key` (CRC16 of its hash tag, or of the whole key), 0–16383. */
  function generate(key: string | Buffer): number;
  export default generate;
}
