--
-- PostgreSQL database dump
--

\restrict OHkUXUrDYVbLbh51ZFdX0y8XOs58ZECSZCI95fkvMkCxt3IlKm5bV59iEOmeBQ9

-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: Order; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public."Order" (
    o_id integer NOT NULL,
    o_d_id integer NOT NULL,
    o_w_id integer NOT NULL,
    o_c_id integer,
    o_entry_d timestamp without time zone,
    o_carrier_id integer,
    o_ol_cnt integer,
    o_all_local integer
);


ALTER TABLE public."Order" OWNER TO postgres;

--
-- Name: customer; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.customer (
    c_id integer NOT NULL,
    c_d_id integer NOT NULL,
    c_w_id integer NOT NULL,
    c_first character varying(16),
    c_middle character(2),
    c_last character varying(16),
    c_street_1 character varying(20),
    c_street_2 character varying(20),
    c_city character varying(20),
    c_state character(2),
    c_zip character(9),
    c_phone character(16),
    c_since timestamp without time zone,
    c_credit character(2),
    c_credit_lim numeric(12,2),
    c_discount numeric(4,4),
    c_balance numeric(12,2),
    c_ytd_payment numeric(12,2),
    c_payment_cnt integer,
    c_delivery_cnt integer,
    c_data character varying(500)
);


ALTER TABLE public.customer OWNER TO postgres;

--
-- Name: district; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.district (
    d_id integer NOT NULL,
    d_w_id integer NOT NULL,
    d_name character varying(10),
    d_street_1 character varying(20),
    d_street_2 character varying(20),
    d_city character varying(20),
    d_state character(2),
    d_zip character(9),
    d_tax numeric(4,4),
    d_ytd numeric(12,2),
    d_next_o_id integer
);


ALTER TABLE public.district OWNER TO postgres;

--
-- Name: history; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.history (
    h_c_id integer,
    h_c_d_id integer,
    h_c_w_id integer,
    h_d_id integer,
    h_w_id integer,
    h_date timestamp without time zone,
    h_amount numeric(6,2),
    h_data character varying(24)
);


ALTER TABLE public.history OWNER TO postgres;

--
-- Name: item; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.item (
    i_id integer NOT NULL,
    i_im_id integer,
    i_name character varying(24),
    i_price numeric(5,2),
    i_data character varying(50)
);


ALTER TABLE public.item OWNER TO postgres;

--
-- Name: neworder; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.neworder (
    no_o_id integer NOT NULL,
    no_d_id integer NOT NULL,
    no_w_id integer NOT NULL
);


ALTER TABLE public.neworder OWNER TO postgres;

--
-- Name: orderline; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.orderline (
    ol_o_id integer NOT NULL,
    ol_d_id integer NOT NULL,
    ol_w_id integer NOT NULL,
    ol_number integer NOT NULL,
    ol_i_id integer,
    ol_supply_w_id integer,
    ol_delivery_d timestamp without time zone,
    ol_quantity integer,
    ol_amount numeric(6,2),
    ol_dist_info character(24)
);


ALTER TABLE public.orderline OWNER TO postgres;

--
-- Name: stock; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.stock (
    s_i_id integer NOT NULL,
    s_w_id integer NOT NULL,
    s_quantity integer,
    s_dist_01 character(24),
    s_dist_02 character(24),
    s_dist_03 character(24),
    s_dist_04 character(24),
    s_dist_05 character(24),
    s_dist_06 character(24),
    s_dist_07 character(24),
    s_dist_08 character(24),
    s_dist_09 character(24),
    s_dist_10 character(24),
    s_ytd integer,
    s_order_cnt integer,
    s_remote_cnt integer,
    s_data character varying(50)
);


ALTER TABLE public.stock OWNER TO postgres;

--
-- Name: warehouse; Type: TABLE; Schema: public; Owner: postgres
--

CREATE TABLE public.warehouse (
    w_id integer NOT NULL,
    w_name character varying(10),
    w_street_1 character varying(20),
    w_street_2 character varying(20),
    w_city character varying(20),
    w_state character(2),
    w_zip character(9),
    w_tax numeric(4,4),
    w_ytd numeric(12,2)
);


ALTER TABLE public.warehouse OWNER TO postgres;

--
-- Name: Order Order_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public."Order"
    ADD CONSTRAINT "Order_pkey" PRIMARY KEY (o_w_id, o_d_id, o_id);


--
-- Name: customer customer_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.customer
    ADD CONSTRAINT customer_pkey PRIMARY KEY (c_w_id, c_d_id, c_id);


--
-- Name: district district_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.district
    ADD CONSTRAINT district_pkey PRIMARY KEY (d_w_id, d_id);


--
-- Name: item item_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.item
    ADD CONSTRAINT item_pkey PRIMARY KEY (i_id);


--
-- Name: neworder neworder_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.neworder
    ADD CONSTRAINT neworder_pkey PRIMARY KEY (no_w_id, no_d_id, no_o_id);


--
-- Name: orderline orderline_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.orderline
    ADD CONSTRAINT orderline_pkey PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number);


--
-- Name: stock stock_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.stock
    ADD CONSTRAINT stock_pkey PRIMARY KEY (s_w_id, s_i_id);


--
-- Name: warehouse warehouse_pkey; Type: CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.warehouse
    ADD CONSTRAINT warehouse_pkey PRIMARY KEY (w_id);


--
-- Name: customer fcd; Type: FK CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.customer
    ADD CONSTRAINT fcd FOREIGN KEY (c_w_id, c_d_id) REFERENCES public.district(d_w_id, d_id);


--
-- Name: district fdw; Type: FK CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.district
    ADD CONSTRAINT fdw FOREIGN KEY (d_w_id) REFERENCES public.warehouse(w_id);


--
-- Name: history fhc; Type: FK CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.history
    ADD CONSTRAINT fhc FOREIGN KEY (h_c_w_id, h_c_d_id, h_c_id) REFERENCES public.customer(c_w_id, c_d_id, c_id);


--
-- Name: history fhd; Type: FK CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.history
    ADD CONSTRAINT fhd FOREIGN KEY (h_w_id, h_d_id) REFERENCES public.district(d_w_id, d_id);


--
-- Name: orderline flo; Type: FK CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.orderline
    ADD CONSTRAINT flo FOREIGN KEY (ol_w_id, ol_d_id, ol_o_id) REFERENCES public."Order"(o_w_id, o_d_id, o_id);


--
-- Name: orderline fls; Type: FK CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.orderline
    ADD CONSTRAINT fls FOREIGN KEY (ol_supply_w_id, ol_i_id) REFERENCES public.stock(s_w_id, s_i_id);


--
-- Name: neworder fno; Type: FK CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.neworder
    ADD CONSTRAINT fno FOREIGN KEY (no_w_id, no_d_id, no_o_id) REFERENCES public."Order"(o_w_id, o_d_id, o_id);


--
-- Name: Order foc; Type: FK CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public."Order"
    ADD CONSTRAINT foc FOREIGN KEY (o_w_id, o_d_id, o_c_id) REFERENCES public.customer(c_w_id, c_d_id, c_id);


--
-- Name: stock fsi; Type: FK CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.stock
    ADD CONSTRAINT fsi FOREIGN KEY (s_i_id) REFERENCES public.item(i_id);


--
-- Name: stock fsw; Type: FK CONSTRAINT; Schema: public; Owner: postgres
--

ALTER TABLE ONLY public.stock
    ADD CONSTRAINT fsw FOREIGN KEY (s_w_id) REFERENCES public.warehouse(w_id);


--
-- PostgreSQL database dump complete
--

\unrestrict OHkUXUrDYVbLbh51ZFdX0y8XOs58ZECSZCI95fkvMkCxt3IlKm5bV59iEOmeBQ9

