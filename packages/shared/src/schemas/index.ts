/** TypeBox schemas of the wire format, used for validation, serialization and the OpenAPI document. */
export * from './delivery.js';
export * from './event.js';
export * from './event-log.js';
export * from './pagination.js';
export * from './problem.js';
export * from './subscription.js';
export * from './portal.js';
export * from './transformation.js';
export * from './receiver-auth.js';
export * from './destination.js';
