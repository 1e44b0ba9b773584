import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { cliDevIssuerUrl } from '../../src/cli/token-source.js';
import { devIssuerUrl } from '../../src/runtime/build-services.js';

/** The CLI finds the development issuer's URL by the server's rule (it does not import the runtime to do so). */
describe('cliDevIssuerUrl', () => {
  it('is the server\'s devIssuerUrl for every host, port and configured URL', () => {
    const cases = [
      { PORT: '8080' }, { PORT: '9123', HOST: '0.0.0.0' }, { HOST: '::', PORT: '1' }, { HOST: '::1', PORT: '8443' }, { HOST: 'localhost' },
    ];
    for (const env of cases) {
      const config = loadConfig({ env, configDir: path.resolve('config') });
      expect(cliDevIssuerUrl(config), JSON.stringify(env)).toBe(devIssuerUrl(config));
    }
    const configured = loadConfig({ env: {}, configDir: path.resolve('config'), overrides: { auth: { devIssuerUrl: 'https://wcr.example/dev-issuer/' } } });
    expect(cliDevIssuerUrl(configured)).toBe(devIssuerUrl(configured));
    expect(cliDevIssuerUrl(configured)).toBe('https://wcr.example/dev-issuer');
  });
});
