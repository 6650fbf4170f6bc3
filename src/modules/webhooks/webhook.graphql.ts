import { Field, Int, ObjectType } from 'type-graphql';
import { DateTime } from '../../graphql/scalars.js';

@ObjectType('WebhookSecret', { description: 'The secret webhook deliveries are signed with (Standard Webhooks, whsec_…)' })
export class WebhookSecretType {
  @Field() secret!: string;
  @Field(() => DateTime) createdAt!: Date;
}

@ObjectType('WebhookAttempt', { description: 'One attempt to deliver a job event to its webhook URL' })
export class WebhookAttemptType {
  @Field(() => Int) attempt!: number;
  @Field({ description: 'The webhook-id header: the same on every retry of one event' }) eventId!: string;
  @Field({ description: 'job.succeeded, job.failed or job.canceled' }) eventType!: string;
  @Field(() => Int, { nullable: true, description: 'What the receiver answered; null when it could not be reached' }) statusCode!: number | null;
  @Field(() => String, { nullable: true }) error!: string | null;
  @Field(() => Int) durationMs!: number;
  @Field(() => DateTime) createdAt!: Date;
}

@ObjectType('JobWebhook', { description: 'Where a job’s end is announced, and each delivery attempt so far' })
export class JobWebhookType {
  @Field() url!: string;
  @Field(() => [WebhookAttemptType]) attempts!: WebhookAttemptType[];
}
