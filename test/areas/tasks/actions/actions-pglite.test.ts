import { actionSuite } from './action-suite.js';

actionSuite('pglite');
