#!/usr/bin/env node
/** The quickstart's CDK app, as `cdk init app --language typescript` lays it out. */
import * as cdk from 'aws-cdk-lib/core';
import { MyAppStack } from '../lib/my-app-stack';

const app = new cdk.App();
new MyAppStack(app, 'MyAppStack');
