"""chatmon on Kafka: faust workers (two stages), a kafka-python producer and topic admin.

Imported only by ``chatmon worker|produce|topics`` and the Kafka benchmark; the embedded runner
never imports faust.
"""
