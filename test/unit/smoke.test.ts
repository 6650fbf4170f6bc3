describe('toolchain', () => {
  it('runs TypeScript tests as ES modules', async () => {
    const { createHash } = await import('node:crypto');
    expect(createHash('sha256').update('x').digest('hex')).toHaveLength(64);
  });
});
