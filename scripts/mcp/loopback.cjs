// Preloaded into Node servers (node --require) so that every listening socket binds to
// 127.0.0.1 only, whatever host the server asked for.
'use strict';
const net = require('net');
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  if (first !== null && typeof first === 'object' && !Array.isArray(first)) {
    args[0] = { ...first, host: '127.0.0.1' };
    return listen.apply(this, args);
  }
  if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    const callbacks = args.slice(1).filter((a) => typeof a === 'function');
    return listen.call(this, { port: Number(first), host: '127.0.0.1' }, ...callbacks);
  }
  return listen.apply(this, args);
};
