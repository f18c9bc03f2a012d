/**
 * Types for comlink's Node adapter: the package ships node-adapter.mjs beside node-adapter.d.ts,
 * which TypeScript does not pair up by itself. Not here: any code.
 */
declare module 'comlink/dist/esm/node-adapter.mjs' {
  export { default } from 'comlink/dist/esm/node-adapter';
}
