import 'reflect-metadata';
// Tests never talk to the real internet: providers point at local servers that each test starts.
process.env.NODE_ENV ??= 'test';
process.env.LOG_LEVEL ??= 'silent';
