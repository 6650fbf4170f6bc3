import { OptionalProps, ArrayType } from '@mikro-orm/core';
import { Entity, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { randomUUID } from 'node:crypto';

/** An API key. Only an HMAC of its secret is stored; the full key is shown once, at creation. */
@Entity({ tableName: 'api_key' })
export class ApiKey {
  [OptionalProps]?: 'id' | 'scopes' | 'createdAt' | 'lastUsedAt' | 'revokedAt';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'uuid', fieldName: 'account_id' })
  accountId!: string;

  @Property({ type: 'text' })
  name!: string;

  @Property({ type: 'text', unique: true })
  publicId!: string;

  @Property({ type: 'blob', hidden: true, lazy: true })
  secretHash!: Buffer;

  @Property({ type: 'text' })
  last4!: string;

  @Property({ type: ArrayType })
  scopes: string[] = [];

  @Property({ type: 'timestamptz' })
  createdAt: Date = new Date();

  @Property({ type: 'timestamptz', nullable: true })
  lastUsedAt: Date | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  revokedAt: Date | null = null;
}
