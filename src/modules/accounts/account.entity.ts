import { OptionalProps, ArrayType } from '@mikro-orm/core';
import { Entity, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { randomUUID } from 'node:crypto';

/** Roles beyond an ordinary account holder. */
export const ACCOUNT_ROLES = ['admin', 'analyst'] as const;
export type AccountRole = (typeof ACCOUNT_ROLES)[number];

/** A paying customer: owns keys, a membership, a credit balance and jobs. */
@Entity({ tableName: 'account' })
export class Account {
  [OptionalProps]?: 'id' | 'email' | 'roles' | 'oidcSubject' | 'createdAt';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'text' })
  name!: string;

  @Property({ type: 'text', nullable: true })
  email: string | null = null;

  @Property({ type: ArrayType })
  roles: AccountRole[] = [];

  /** `issuer|sub` of the OpenID Connect identity that signs in as this account, if any. */
  @Property({ type: 'text', nullable: true, unique: true })
  oidcSubject: string | null = null;

  @Property({ type: 'timestamptz' })
  createdAt: Date = new Date();
}
