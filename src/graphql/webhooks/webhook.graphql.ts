import { Field, Int, ObjectType } from 'type-graphql';
import { DateTime } from '../scalars.js';
import { InheritsScope } from '../scopes.js';

@ObjectType('WebhookSecret', {
  simpleResolvers: true,
  description: 'The secret webhook deliveries are signed with (Standard Webhooks, whsec_…)',
})
export class WebhookSecretType {
  @Field({ description: 'whsec_ followed by the base64 key; give it to your Standard Webhooks library to verify webhook-signature' })
  secret!: string;
  @Field(() => DateTime, { description: 'When this secret was made (first read or last rotation)' }) createdAt!: Date;
}

@ObjectType('WebhookAttempt', { simpleResolvers: true, description: 'One attempt to deliver a job event to its webhook URL' })
export class WebhookAttemptType {
  @Field(() => Int, { description: '1 for the first delivery of the event, then 2, 3, … for its retries' }) attempt!: number;
  @Field({ description: 'The webhook-id header: the same on every retry of one event' }) eventId!: string;
  @Field({ description: 'job.succeeded, job.failed or job.canceled' }) eventType!: string;
  @Field(() => Int, { nullable: true, description: 'What the receiver answered; null when it could not be reached' }) statusCode!:
    | number
    | null;
  @Field(() => String, {
    nullable: true,
    description: 'Why the attempt failed, in our words (a non-2xx answer, no answer in time, unreachable); null when it was delivered',
  })
  error!: string | null;
  @Field(() => Int, { description: 'How long the attempt took, in milliseconds' }) durationMs!: number;
  @Field(() => DateTime, { description: 'When the attempt was made' }) createdAt!: Date;
}

@ObjectType('JobWebhook', { simpleResolvers: true, description: 'Where a job’s end is announced, and each delivery attempt so far' })
export class JobWebhookType {
  @Field({ description: 'The webhookUrl the job was started with' }) url!: string;
  @Field(() => [WebhookAttemptType], { description: 'The attempts so far, oldest first; empty until the job ends' })
  @InheritsScope()
  attempts!: WebhookAttemptType[];
}
