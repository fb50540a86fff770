"""Runnable demos: python -m vkml.examples.digits"""
