/**
 * The part of the WebAssembly JavaScript API that the transformation thread uses: TypeScript's
 * libraries declare it only with the DOM's, which this project does not load.
 */
declare namespace WebAssembly {
  interface Module {
    readonly [Symbol.toStringTag]: string;
  }
  interface MemoryDescriptor {
    /** In 64 KiB pages. */
    initial: number;
    /** In 64 KiB pages: the memory cannot grow past it. */
    maximum?: number;
  }
  class Memory {
    constructor(descriptor: MemoryDescriptor);
    readonly buffer: ArrayBuffer;
  }
  function compile(bytes: Uint8Array): Promise<Module>;
}
