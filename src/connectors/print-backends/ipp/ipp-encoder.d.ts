/** The parts of `ipp-encoder` (a CommonJS IPP codec without types of its own) the IPP backend uses. */
declare module 'ipp-encoder' {
  export interface IppAttribute {
    tag: number;
    name: string;
    value: unknown[];
  }
  export interface IppGroup {
    tag: number;
    attributes: IppAttribute[];
  }
  export interface IppMessage {
    version: { major: number; minor: number };
    operationId?: number;
    statusCode?: number;
    requestId: number;
    groups: IppGroup[];
  }
  interface Codec {
    encode(obj: IppMessage): Buffer;
    decode(buf: Buffer, start?: number, end?: number): IppMessage;
  }
  const ipp: {
    CONSTANTS: Record<string, number>;
    STATUS_CODES: Record<number, string>;
    request: Codec;
    response: Codec;
  };
  export default ipp;
}
