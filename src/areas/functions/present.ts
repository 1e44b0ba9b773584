import type { FunctionDescriptor } from '../../connectors/connector.js';

/** A function as `GET /v1/services/{sid}/function` lists it, with the link to call it. */
export function presentFunction(sid: string, d: FunctionDescriptor): Record<string, unknown> {
  return {
    fid: d.fid,
    description: d.description,
    parameters: d.parameters.map((p) => ({ name: p.name, type: p.type, required: p.required, description: p.description, ...(p.example !== undefined ? { example: p.example } : {}) })),
    ...(d.requires ? { requires: { area: d.requires.area, action: d.requires.action } } : {}),
    links: { self: { href: `/v1/services/${encodeURIComponent(sid)}/function/${encodeURIComponent(d.fid)}` } },
  };
}
