#!/bin/bash
echo rotate
